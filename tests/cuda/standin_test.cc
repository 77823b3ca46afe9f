// The CUDA driver stand-in's own tests (tests/cuda/CMakeLists.txt lists which ctest runs which
// group, and under which variables). Init.* must come first in a process: it checks the calls
// before cuInit.
#include "cuda_standin.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr size_t kGran = size_t{2} << 20;

// cuda.h's layouts on 64-bit Linux, which the library's bindings repeat.
static_assert(sizeof(CUmemLocation) == 8, "CUmemLocation is 8 bytes");
static_assert(sizeof(CUmemAllocationProp) == 32, "CUmemAllocationProp is 32 bytes");
static_assert(offsetof(CUmemAllocationProp, location) == 8, "location at 8");
static_assert(offsetof(CUmemAllocationProp, win32HandleMetaData) == 16, "win32 at 16");
static_assert(offsetof(CUmemAllocationProp, allocFlags) == 24, "allocFlags at 24");
static_assert(sizeof(CUmemAccessDesc) == 12, "CUmemAccessDesc is 12 bytes");
static_assert(sizeof(CUresult) == 4, "CUresult is 4 bytes");

#define CU_OK(expr) ASSERT_EQ(CUDA_SUCCESS, (expr)) << #expr

CUdeviceptr dp(const void *p) { return reinterpret_cast<uintptr_t>(p); }

CUmemAllocationProp pinned(int dev, CUmemAllocationHandleType handles) {
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.requestedHandleTypes = handles;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    return prop;
}

CUmemAccessDesc access(int dev, CUmemAccess_flags flags) {
    CUmemAccessDesc d;
    d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    d.location.id = dev;
    d.flags = flags;
    return d;
}

// Every test but Init.* runs with device 0's primary context current on the test's thread.
class Cu : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_EQ(CUDA_SUCCESS, cuInit(0));
        ASSERT_EQ(CUDA_SUCCESS, cuDevicePrimaryCtxRetain(&ctx_, 0));
        ASSERT_EQ(CUDA_SUCCESS, cuCtxSetCurrent(ctx_));
    }
    void TearDown() override {
        cuCtxSetCurrent(nullptr);
        EXPECT_EQ(CUDA_SUCCESS, cuDevicePrimaryCtxRelease(0));
    }
    CUcontext ctx_ = nullptr;
};

// Reserved, created, mapped and (unless told) access-enabled device memory.
struct Mapped {
    CUdeviceptr va = 0;
    size_t size = 0;
    CUmemGenericAllocationHandle h = 0;

    CUresult make(size_t bytes, bool posix = true, bool enable = true, int dev = 0) {
        size = bytes;
        if (CUresult rc = cuMemAddressReserve(&va, size, 0, 0, 0)) return rc;
        CUmemAllocationProp prop =
            pinned(dev, posix ? CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR : CU_MEM_HANDLE_TYPE_NONE);
        if (CUresult rc = cuMemCreate(&h, size, &prop, 0)) return rc;
        if (CUresult rc = cuMemMap(va, size, 0, h, 0)) return rc;
        if (!enable) return CUDA_SUCCESS;
        CUmemAccessDesc d = access(dev, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
        return cuMemSetAccess(va, size, &d, 1);
    }
    void drop() {
        if (va && size) {
            cuMemUnmap(va, size);
            if (h) cuMemRelease(h);
            cuMemAddressFree(va, size);
        }
        va = 0;
        h = 0;
    }
    ~Mapped() { drop(); }
};

// Waits for a child for at most `seconds`; kills it past that. Returns the wait status.
int reap(pid_t pid, int seconds = 20) {
    int status = 0;
    auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (waitpid(pid, &status, WNOHANG) == 0) {
        if (std::chrono::steady_clock::now() > end) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            ADD_FAILURE() << "child " << pid << " hung: killed after " << seconds << " s";
            return status;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return status;
}

bool send_fd(int sock, int fd) {
    char byte = 'f';
    iovec iov{&byte, 1};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr *cm = CMSG_FIRSTHDR(&msg);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cm), &fd, sizeof fd);
    return sendmsg(sock, &msg, 0) == 1;
}

int recv_fd(int sock) {
    char byte = 0;
    iovec iov{&byte, 1};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    if (recvmsg(sock, &msg, 0) != 1) return -1;
    cmsghdr *cm = CMSG_FIRSTHDR(&msg);
    if (!cm || cm->cmsg_type != SCM_RIGHTS) return -1;
    int fd = -1;
    memcpy(&fd, CMSG_DATA(cm), sizeof fd);
    return fd;
}

// ---- start-up -------------------------------------------------------------------------------

TEST(Init, CallsBeforeCuInitFailAndVersionQueriesAnswer) {
    int n = -1;
    EXPECT_EQ(CUDA_ERROR_NOT_INITIALIZED, cuDeviceGetCount(&n));
    CUcontext ctx = nullptr;
    EXPECT_EQ(CUDA_ERROR_NOT_INITIALIZED, cuDevicePrimaryCtxRetain(&ctx, 0));
    CUdeviceptr p = 0;
    EXPECT_EQ(CUDA_ERROR_NOT_INITIALIZED, cuMemAlloc(&p, 64));
    int version = 0;
    CU_OK(cuDriverGetVersion(&version));
    EXPECT_EQ(12090, version);
    const char *name = nullptr;
    CU_OK(cuGetErrorName(CUDA_ERROR_INVALID_CONTEXT, &name));
    EXPECT_STREQ("CUDA_ERROR_INVALID_CONTEXT", name);
    const char *text = nullptr;
    CU_OK(cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &text));
    EXPECT_STREQ("out of memory", text);
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuGetErrorName(static_cast<CUresult>(12345), &name));
    EXPECT_EQ(nullptr, name);
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuInit(1));
    CU_OK(cuInit(0));
    CU_OK(cuInit(0));
    CU_OK(cuDeviceGetCount(&n));
    EXPECT_EQ(1, n);  // the default: one device
}

// ---- devices and contexts -------------------------------------------------------------------

TEST_F(Cu, DevicesAndAttributes) {
    CUdevice dev = -1;
    CU_OK(cuDeviceGet(&dev, 0));
    EXPECT_EQ(0, dev);
    EXPECT_EQ(CUDA_ERROR_INVALID_DEVICE, cuDeviceGet(&dev, 1));
    EXPECT_EQ(CUDA_ERROR_INVALID_DEVICE, cuDeviceGet(&dev, -1));
    int v = 0;
    CU_OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0));
    EXPECT_EQ(1, v);
    v = 0;
    CU_OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
                               0));
    EXPECT_EQ(1, v);
    v = 0;
    CU_OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 0));
    EXPECT_EQ(1, v);
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE,
              cuDeviceGetAttribute(&v, static_cast<CUdevice_attribute>(1), 0));
    EXPECT_EQ(CUDA_ERROR_INVALID_DEVICE,
              cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 1));
}

TEST_F(Cu, ContextsArePerThreadAndCounted) {
    CUcontext cur = nullptr;
    CU_OK(cuCtxGetCurrent(&cur));
    EXPECT_EQ(ctx_, cur);
    CUdevice dev = -1;
    CU_OK(cuCtxGetDevice(&dev));
    EXPECT_EQ(0, dev);

    // Another thread starts with no current context: memory and stream calls refuse.
    std::thread([&] {
        CUcontext none = ctx_;
        EXPECT_EQ(CUDA_SUCCESS, cuCtxGetCurrent(&none));
        EXPECT_EQ(nullptr, none);
        CUdevice d = -1;
        EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, cuCtxGetDevice(&d));
        CUdeviceptr p = 0;
        EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, cuMemAlloc(&p, 64));
        CUstream s = nullptr;
        EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, cuStreamCreate(&s, 0));
        EXPECT_EQ(CUDA_SUCCESS, cuCtxSetCurrent(ctx_));
        EXPECT_EQ(CUDA_SUCCESS, cuMemAlloc(&p, 64));
        EXPECT_EQ(CUDA_SUCCESS, cuMemFree(p));
    }).join();

    // A second retain gives the same context; it lives until the last release.
    CUcontext again = nullptr;
    CU_OK(cuDevicePrimaryCtxRetain(&again, 0));
    EXPECT_EQ(ctx_, again);
    CU_OK(cuDevicePrimaryCtxRelease(0));
    CU_OK(cuCtxSetCurrent(ctx_));
    CU_OK(cuDevicePrimaryCtxRelease(0));  // the fixture's reference: the context is released
    CUdeviceptr p = 0;
    EXPECT_EQ(CUDA_ERROR_CONTEXT_IS_DESTROYED, cuMemAlloc(&p, 64));
    EXPECT_EQ(CUDA_ERROR_CONTEXT_IS_DESTROYED, cuCtxSetCurrent(ctx_));
    EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, cuDevicePrimaryCtxRelease(0));
    EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT,
              cuCtxSetCurrent(reinterpret_cast<CUcontext>(&again)));  // not a context
    CU_OK(cuDevicePrimaryCtxRetain(&again, 0));                       // for the fixture's release
    EXPECT_EQ(ctx_, again);  // the same primary context, active again
    CU_OK(cuCtxSetCurrent(ctx_));
    CU_OK(cuMemAlloc(&p, 64));
    CU_OK(cuMemFree(p));
}

// ---- virtual memory -------------------------------------------------------------------------

TEST_F(Cu, GranularityAndReservation) {
    CUmemAllocationProp prop = pinned(0, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    size_t g = 0;
    CU_OK(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    EXPECT_EQ(kGran, g);
    CU_OK(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
    EXPECT_EQ(kGran, g);
    CUdeviceptr va = 0;
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemAddressReserve(&va, kGran + 4096, 0, 0, 0));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemAddressReserve(&va, 0, 0, 0, 0));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemAddressReserve(&va, kGran, 3 << 20, 0, 0));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemAddressReserve(&va, kGran, 0, 0, 1));
    size_t align = size_t{64} << 20;
    CU_OK(cuMemAddressReserve(&va, 2 * kGran, align, 0, 0));
    EXPECT_EQ(0u, va % align);
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemAddressFree(va, kGran));  // not the whole range
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemAddressFree(va + kGran, kGran));
    CU_OK(cuMemAddressFree(va, 2 * kGran));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemAddressFree(va, 2 * kGran));  // twice
}

TEST_F(Cu, CreateChecksItsProperties) {
    CUmemGenericAllocationHandle h = 0;
    CUmemAllocationProp prop = pinned(0, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemCreate(&h, kGran / 2, &prop, 0));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemCreate(&h, kGran, nullptr, 0));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemCreate(&h, kGran, &prop, 1));
    CUmemAllocationProp bad = prop;
    bad.type = CU_MEM_ALLOCATION_TYPE_INVALID;
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemCreate(&h, kGran, &bad, 0));
    bad = prop;
    bad.location.type = CU_MEM_LOCATION_TYPE_HOST;
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemCreate(&h, kGran, &bad, 0));
    bad = prop;
    bad.location.id = 1;
    EXPECT_EQ(CUDA_ERROR_INVALID_DEVICE, cuMemCreate(&h, kGran, &bad, 0));
    bad = prop;
    bad.requestedHandleTypes = CU_MEM_HANDLE_TYPE_WIN32;
    EXPECT_EQ(CUDA_ERROR_NOT_SUPPORTED, cuMemCreate(&h, kGran, &bad, 0));
    CU_OK(cuMemCreate(&h, kGran, &prop, 0));
    CU_OK(cuMemRelease(h));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemRelease(h));  // twice
}

TEST_F(Cu, MapFollowsCudasRules) {
    CUdeviceptr va = 0;
    CU_OK(cuMemAddressReserve(&va, 4 * kGran, 0, 0, 0));
    CUmemAllocationProp prop = pinned(0, CU_MEM_HANDLE_TYPE_NONE);
    CUmemGenericAllocationHandle h = 0;
    CU_OK(cuMemCreate(&h, 2 * kGran, &prop, 0));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemMap(va, 2 * kGran, kGran, h, 0));  // offset 0 only
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemMap(va + 4096, kGran, 0, h, 0));   // unaligned
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemMap(va, 4 * kGran, 0, h, 0));      // past the handle
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemMap(va + 3 * kGran, 2 * kGran, 0, h, 0));  // past res.
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemMap(va, kGran, 0, h + 1000, 0));  // not a handle
    CU_OK(cuMemMap(va + kGran, 2 * kGran, 0, h, 0));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemMap(va, 2 * kGran, 0, h, 0));  // overlaps
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemMap(va + 2 * kGran, kGran, 0, h, 0));
    // What is mapped cannot be freed; only whole mappings unmap.
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemAddressFree(va, 4 * kGran));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemUnmap(va + kGran, kGran));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemUnmap(va, 3 * kGran));
    // The handle may be released while mapped: the memory stays until unmapped.
    CUmemAccessDesc d = access(0, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    CU_OK(cuMemSetAccess(va + kGran, 2 * kGran, &d, 1));
    CU_OK(cuMemRelease(h));
    const char text[] = "still here";
    CU_OK(cuMemcpy(va + kGran + 100, dp(text), sizeof text));
    char back[sizeof text] = {};
    CU_OK(cuMemcpy(dp(back), va + kGran + 100, sizeof text));
    EXPECT_STREQ(text, back);
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemMap(va, kGran, 0, h, 0));  // released handle
    CU_OK(cuMemUnmap(va + kGran, 2 * kGran));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemcpy(dp(back), va + kGran + 100, sizeof text));
    CU_OK(cuMemAddressFree(va, 4 * kGran));
}

TEST_F(Cu, AccessMustBeSetBeforeUse) {
    Mapped m;
    CU_OK(m.make(kGran, true, false));
    char buf[64] = "bytes";
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemcpy(m.va, dp(buf), sizeof buf));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemcpy(dp(buf), m.va, sizeof buf));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemsetD8(m.va, 1, 16));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuStreamWriteValue32(nullptr, m.va, 1, 0));
    // Access must cover whole mappings, on a device, with a known flag.
    CUmemAccessDesc d = access(0, CU_MEM_ACCESS_FLAGS_PROT_READ);
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemSetAccess(m.va, kGran / 2, &d, 1));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemSetAccess(m.va, 2 * kGran, &d, 1));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemSetAccess(m.va, kGran, &d, 0));
    CUmemAccessDesc bad = access(1, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    EXPECT_EQ(CUDA_ERROR_INVALID_DEVICE, cuMemSetAccess(m.va, kGran, &bad, 1));
    bad = access(0, static_cast<CUmemAccess_flags>(2));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemSetAccess(m.va, kGran, &bad, 1));
    // Read-only: reads work, writes do not.
    CU_OK(cuMemSetAccess(m.va, kGran, &d, 1));
    CU_OK(cuMemcpy(dp(buf), m.va, sizeof buf));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemcpy(m.va, dp(buf), sizeof buf));
    d.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CU_OK(cuMemSetAccess(m.va, kGran, &d, 1));
    strcpy(buf, "bytes");
    CU_OK(cuMemcpy(m.va, dp(buf), sizeof buf));
    EXPECT_STREQ("bytes", reinterpret_cast<const char *>(m.va));  // not strict: CPU-visible
    // A fresh mapping of the same memory starts without access again.
    CU_OK(cuMemUnmap(m.va, kGran));
    CU_OK(cuMemMap(m.va, kGran, 0, m.h, 0));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemcpy(dp(buf), m.va, sizeof buf));
}

// ---- copies ---------------------------------------------------------------------------------

TEST_F(Cu, CopiesOfEveryKind) {
    Mapped m;
    CU_OK(m.make(kGran));
    CUdeviceptr blk = 0;
    CU_OK(cuMemAlloc(&blk, 1000));
    std::vector<char> src(1000), dst(1000, 0);
    for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<char>(i * 7);
    CU_OK(cuMemcpy(m.va + 5, dp(src.data()), src.size()));  // host to device
    CU_OK(cuMemcpy(blk, m.va + 5, src.size()));             // device to device
    CU_OK(cuMemcpy(dp(dst.data()), blk, dst.size()));       // device to host
    EXPECT_EQ(src, dst);
    std::vector<char> other(1000, 1);
    CU_OK(cuMemcpy(dp(other.data()), dp(src.data()), 1000));  // host to host
    EXPECT_EQ(src, other);
    CU_OK(cuMemsetD8(blk, 0xab, 1000));
    CU_OK(cuMemcpy(dp(dst.data()), blk, dst.size()));
    EXPECT_EQ(std::vector<char>(1000, static_cast<char>(0xab)), dst);
    CU_OK(cuMemcpy(blk, blk, 0));  // nothing to copy

    // Misuse, each naming the address.
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemcpy(blk, dp(src.data()), 1001));  // past the block
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemcpy(m.va + kGran - 8, dp(src.data()), 16));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemcpy(0, dp(src.data()), 16));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemsetD8(dp(dst.data()), 0, 16));       // host memory
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemcpy(dp(dst.data()), m.va - 8, 16));  // host into dev
    CUdeviceptr gone = 0;  // freed device addresses are no host memory either
    CU_OK(cuMemAddressReserve(&gone, kGran, 0, 0, 0));
    CU_OK(cuMemAddressFree(gone, kGran));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemcpy(dp(dst.data()), gone, 16));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemFree(blk + 8));
    CU_OK(cuMemFree(blk));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemFree(blk));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemAlloc(&blk, 0));
}

TEST_F(Cu, CopiesSpanAdjacentMappings) {
    CUdeviceptr va = 0;
    CU_OK(cuMemAddressReserve(&va, 2 * kGran, 0, 0, 0));
    CUmemAllocationProp prop = pinned(0, CU_MEM_HANDLE_TYPE_NONE);
    CUmemGenericAllocationHandle a = 0, b = 0;
    CU_OK(cuMemCreate(&a, kGran, &prop, 0));
    CU_OK(cuMemCreate(&b, kGran, &prop, 0));
    CU_OK(cuMemMap(va, kGran, 0, a, 0));
    CU_OK(cuMemMap(va + kGran, kGran, 0, b, 0));
    CU_OK(cuMemRelease(a));
    CU_OK(cuMemRelease(b));
    CUmemAccessDesc d = access(0, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    CU_OK(cuMemSetAccess(va, 2 * kGran, &d, 1));  // both at once
    std::string text(8192, 'x');
    for (size_t i = 0; i < text.size(); ++i) text[i] = static_cast<char>('a' + i % 26);
    CU_OK(cuMemcpy(va + kGran - 4096, dp(text.data()), text.size()));
    std::string back(text.size(), '\0');
    CU_OK(cuMemcpy(dp(&back[0]), va + kGran - 4096, back.size()));
    EXPECT_EQ(text, back);
    CU_OK(cuMemUnmap(va, 2 * kGran));  // both mappings at once
    CU_OK(cuMemAddressFree(va, 2 * kGran));
}

// ---- streams --------------------------------------------------------------------------------

struct Sleeper {
    int ms;
    std::atomic<int> ran{0};
    const char *watch = nullptr;  // host memory whose first byte the function records
    char seen = 0;
};

void sleep_then_mark(void *arg) {
    auto *s = static_cast<Sleeper *>(arg);
    std::this_thread::sleep_for(std::chrono::milliseconds(s->ms));
    if (s->watch) s->seen = *s->watch;
    s->ran.store(1);
}

TEST_F(Cu, StreamsRunInOrder) {
    CUstream s = nullptr;
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuStreamCreate(&s, 2));
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr blk = 0;
    CU_OK(cuMemAlloc(&blk, 64));
    CU_OK(cuMemsetD8(blk, 'D', 64));
    char host[64];
    memset(host, 'H', sizeof host);
    Sleeper sl;
    sl.ms = 200;
    sl.watch = host;
    CU_OK(cuLaunchHostFunc(s, sleep_then_mark, &sl));
    CU_OK(cuMemcpyAsync(dp(host), blk, sizeof host, s));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ('H', host[0]);  // behind the sleeping host function
    EXPECT_EQ(0, sl.ran.load());
    CU_OK(cuStreamSynchronize(s));
    EXPECT_EQ(1, sl.ran.load());
    EXPECT_EQ('H', sl.seen);  // the host function ran before the copy
    EXPECT_EQ('D', host[0]);
    EXPECT_EQ('D', host[63]);

    // Destroy returns at once, as CUDA's does; what is queued still runs, and the context's
    // synchronize waits for it.
    Sleeper last;
    last.ms = 100;
    CU_OK(cuLaunchHostFunc(s, sleep_then_mark, &last));
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuCtxSynchronize());
    EXPECT_EQ(1, last.ran.load());
    EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, cuStreamSynchronize(s));
    EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, cuStreamDestroy(s));
    EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, cuStreamDestroy(nullptr));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuLaunchHostFunc(nullptr, nullptr, nullptr));
    CU_OK(cuMemFree(blk));
}

TEST_F(Cu, LegacyStreamOrdersWithBlockingStreams) {
    CUstream blocking = nullptr;
    CU_OK(cuStreamCreate(&blocking, CU_STREAM_DEFAULT));
    Sleeper first;
    first.ms = 200;
    CU_OK(cuLaunchHostFunc(blocking, sleep_then_mark, &first));
    // Work on the NULL stream waits for the blocking stream's earlier work...
    int before = -1;
    Sleeper second;
    second.ms = 0;
    CU_OK(cuLaunchHostFunc(
        nullptr, [](void *p) { *static_cast<int *>(p) = 1; }, &before));
    CU_OK(cuLaunchHostFunc(nullptr, sleep_then_mark, &second));
    CU_OK(cuStreamSynchronize(nullptr));
    EXPECT_EQ(1, first.ran.load());
    EXPECT_EQ(1, before);
    EXPECT_EQ(1, second.ran.load());
    // ...and cuMemcpy, synchronous, after it too.
    Sleeper third;
    third.ms = 150;
    CU_OK(cuLaunchHostFunc(blocking, sleep_then_mark, &third));
    char a = 'a', b = 'b';
    CU_OK(cuMemcpy(dp(&a), dp(&b), 1));
    EXPECT_EQ(1, third.ran.load());
    EXPECT_EQ('b', a);
    CU_OK(cuStreamDestroy(blocking));
}

TEST_F(Cu, AsyncFailureIsReportedOnceBySynchronize) {
    CUstream s = nullptr;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    Mapped m;
    CU_OK(m.make(kGran));
    std::atomic<int> go{0};
    CU_OK(cuLaunchHostFunc(
        s,
        [](void *p) {
            auto *g = static_cast<std::atomic<int> *>(p);
            while (!g->load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        },
        &go));
    char buf[16] = {};
    CU_OK(cuMemcpyAsync(dp(buf), m.va, sizeof buf, s));
    CU_OK(cuMemUnmap(m.va, m.size));  // gone before the stream reaches the copy
    go.store(1);
    EXPECT_EQ(CUDA_ERROR_ILLEGAL_ADDRESS, cuStreamSynchronize(s));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuMemMap(m.va, m.size, 0, m.h, 0));  // for the clean-up
    CU_OK(cuStreamDestroy(s));
}

struct HostCalls {
    CUresult ctx = CUDA_SUCCESS;
    CUresult copy = CUDA_SUCCESS;
    CUresult sync = CUDA_SUCCESS;
    CUresult name = CUDA_SUCCESS;
    CUstream stream = nullptr;
};

void call_driver(void *arg) {
    auto *h = static_cast<HostCalls *>(arg);
    CUcontext c = nullptr;
    h->ctx = cuCtxGetCurrent(&c);
    char x = 0, y = 1;
    h->copy = cuMemcpy(dp(&x), dp(&y), 1);
    h->sync = cuStreamSynchronize(h->stream);
    const char *n = nullptr;
    h->name = cuGetErrorName(CUDA_SUCCESS, &n);
}

TEST_F(Cu, HostFunctionsMayNotCallTheDriver) {
    CUstream s = nullptr;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    HostCalls h;
    h.stream = s;
    CU_OK(cuLaunchHostFunc(s, call_driver, &h));
    CU_OK(cuStreamSynchronize(s));
    EXPECT_EQ(CUDA_ERROR_NOT_PERMITTED, h.ctx);
    EXPECT_EQ(CUDA_ERROR_NOT_PERMITTED, h.copy);
    EXPECT_EQ(CUDA_ERROR_NOT_PERMITTED, h.sync);
    EXPECT_EQ(CUDA_ERROR_NOT_PERMITTED, h.name);
    CU_OK(cuStreamDestroy(s));
}

// ---- stream memory operations ---------------------------------------------------------------

void nap_ms(void *arg) {
    std::this_thread::sleep_for(std::chrono::milliseconds(*static_cast<int *>(arg)));
}

TEST_F(Cu, WriteAndWaitValueOrderTwoStreams) {
    Mapped m;
    CU_OK(m.make(kGran));
    CUdeviceptr flag32 = m.va, flag64 = m.va + 8, data = m.va + 4096;
    CU_OK(cuMemsetD8(m.va, 0, 8192));
    CUstream consumer = nullptr, producer = nullptr;
    CU_OK(cuStreamCreate(&consumer, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamCreate(&producer, CU_STREAM_NON_BLOCKING));
    char got[32] = {};
    CU_OK(cuStreamWaitValue32(consumer, flag32, 1, CU_STREAM_WAIT_VALUE_GEQ));
    CU_OK(cuStreamWaitValue64(consumer, flag64, 0x100000000ull, CU_STREAM_WAIT_VALUE_EQ));
    CU_OK(cuMemcpyAsync(dp(got), data, sizeof got, consumer));
    int ms = 150;
    const char payload[32] = "written before the flags";
    CU_OK(cuLaunchHostFunc(producer, nap_ms, &ms));
    CU_OK(cuMemcpyAsync(data, dp(payload), sizeof payload, producer));
    CU_OK(cuStreamWriteValue32(producer, flag32, 1, CU_STREAM_WRITE_VALUE_DEFAULT));
    CU_OK(cuStreamWriteValue64(producer, flag64, 0x100000000ull, CU_STREAM_WRITE_VALUE_DEFAULT));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ('\0', got[0]);  // still waiting
    CU_OK(cuStreamSynchronize(consumer));
    EXPECT_STREQ(payload, got);
    CU_OK(cuStreamSynchronize(producer));
    CU_OK(cuStreamDestroy(consumer));
    CU_OK(cuStreamDestroy(producer));
}

// As CUDA's: destroying a stream returns at once and its queued work still runs; the context's
// synchronize waits for it (and for every live stream), and a destroyed handle is refused.
TEST_F(Cu, DestroyReturnsAtOnceAndContextSynchronizeWaits) {
    CUstream s = nullptr;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    int ms = 300;
    CU_OK(cuLaunchHostFunc(s, nap_ms, &ms));
    std::atomic<int> flag{0};
    CU_OK(cuLaunchHostFunc(
        s, [](void *f) { static_cast<std::atomic<int> *>(f)->store(1); }, &flag));
    auto t0 = std::chrono::steady_clock::now();
    CU_OK(cuStreamDestroy(s));
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(200));
    EXPECT_EQ(0, flag.load());
    EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, cuStreamSynchronize(s));
    CU_OK(cuCtxSynchronize());
    EXPECT_EQ(1, flag.load());
    CU_OK(cuCtxSynchronize());  // nothing left
}

TEST_F(Cu, WaitValueComparisons) {
    Mapped m;
    CU_OK(m.make(kGran));
    CUstream s = nullptr;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    uint32_t one = 1;
    CU_OK(cuMemcpy(m.va, dp(&one), 4));
    // Each is satisfied at once: a wrong comparison would hold the stream until the timeout.
    CU_OK(cuStreamWaitValue32(s, m.va, 0xffffffffu, CU_STREAM_WAIT_VALUE_GEQ));  // wraps: 1 - -1
    CU_OK(cuStreamWaitValue32(s, m.va, 1, CU_STREAM_WAIT_VALUE_EQ));
    CU_OK(cuStreamWaitValue32(s, m.va, 3, CU_STREAM_WAIT_VALUE_AND));
    CU_OK(cuStreamWaitValue32(s, m.va, 2, CU_STREAM_WAIT_VALUE_NOR));
    CU_OK(cuStreamWaitValue32(s, m.va, 1, CU_STREAM_WAIT_VALUE_GEQ | CU_STREAM_WAIT_VALUE_FLUSH));
    CU_OK(cuStreamWaitValue64(s, m.va + 8, 0, CU_STREAM_WAIT_VALUE_NOR));
    auto t0 = std::chrono::steady_clock::now();
    CU_OK(cuStreamSynchronize(s));
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
    // Misuse.
    uint32_t host = 0;
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuStreamWriteValue32(s, dp(&host), 1, 0));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuStreamWaitValue32(s, dp(&host), 1, 0));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuStreamWriteValue32(s, m.va + 2, 1, 0));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuStreamWaitValue64(s, m.va + 4, 1, 0));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuStreamWaitValue32(s, m.va, 1, 7));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuStreamWriteValue64(s, m.va, 1, 2));
    CU_OK(cuStreamDestroy(s));
}

// ---- modules and kernels ----------------------------------------------------------------------

std::string read_file(const char *path) {
    std::string text;
    FILE *f = fopen(path, "r");
    if (!f) return text;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
    fclose(f);
    return text;
}

// The library's own PTX (STREAM_PTX, the path CMake gives) loads, and its two kernels run as the
// stand-in's host models, in stream order; everything else about modules is refused loudly.
TEST_F(Cu, ModulesRunTheLibrarysStreamKernels) {
    std::string ptx = read_file(STREAM_PTX);
    ASSERT_FALSE(ptx.empty()) << "cannot read " << STREAM_PTX;
    CUmodule mod = nullptr;
    CU_OK(cuModuleLoadData(&mod, ptx.c_str()));
    CUfunction add = nullptr, wait = nullptr, none = nullptr;
    CU_OK(cuModuleGetFunction(&add, mod, "shmem_stream_signal_add"));
    CU_OK(cuModuleGetFunction(&wait, mod, "shmem_stream_wait"));
    EXPECT_EQ(CUDA_ERROR_NOT_FOUND, cuModuleGetFunction(&none, mod, "shmem_stream_nothing"));

    Mapped m;
    CU_OK(m.make(kGran));
    CU_OK(cuMemsetD8(m.va, 0, 8192));
    CUdeviceptr word = m.va, data = m.va + 4096;
    CUstream s = nullptr;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    uint64_t addr = word;
    uint32_t cmp = 2, value = 4;  // GT 4
    void *wait_args[] = {&addr, &cmp, &value};
    CU_OK(cuLaunchKernel(wait, 1, 1, 1, 1, 1, 1, 0, s, wait_args, nullptr));
    char got[16] = {};
    CU_OK(cuMemcpyAsync(dp(got), data, sizeof got, s));
    // Held: the word is 0; adds of 3, then 2, on another stream make it 5.
    const char payload[16] = "after the wait";
    CU_OK(cuMemcpy(data, dp(payload), sizeof payload));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ('\0', got[0]);
    CUstream t = nullptr;
    CU_OK(cuStreamCreate(&t, CU_STREAM_NON_BLOCKING));
    uint32_t three = 3, two = 2;
    void *add3[] = {&addr, &three};
    void *add2[] = {&addr, &two};
    CU_OK(cuLaunchKernel(add, 1, 1, 1, 1, 1, 1, 0, t, add3, nullptr));
    CU_OK(cuStreamSynchronize(t));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ('\0', got[0]);  // 3 is not > 4
    CU_OK(cuLaunchKernel(add, 1, 1, 1, 1, 1, 1, 0, t, add2, nullptr));
    CU_OK(cuStreamSynchronize(s));
    EXPECT_STREQ(payload, got);
    int32_t now = 0;
    CU_OK(cuMemcpy(dp(&now), word, 4));
    EXPECT_EQ(5, now);
    // Signed comparisons: with the word at 5, LT -1 would hold the stream; LE 5, NE 0, EQ 5 hold
    // at once.
    for (uint32_t c : {5u, 1u, 0u}) {
        cmp = c;
        value = c == 1 ? 0 : 5;
        CU_OK(cuLaunchKernel(wait, 1, 1, 1, 1, 1, 1, 0, s, wait_args, nullptr));
    }
    auto t0 = std::chrono::steady_clock::now();
    CU_OK(cuStreamSynchronize(s));
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));

    // Refused: a cmp the kernel does not know, shapes the models do not run, extra, a cubin,
    // text that is not PTX, a kernel with no model.
    cmp = 6;
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE,
              cuLaunchKernel(wait, 1, 1, 1, 1, 1, 1, 0, s, wait_args, nullptr));
    cmp = 0;
    EXPECT_EQ(CUDA_ERROR_NOT_SUPPORTED,
              cuLaunchKernel(wait, 2, 1, 1, 1, 1, 1, 0, s, wait_args, nullptr));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE,
              cuLaunchKernel(wait, 1, 1, 1, 0, 1, 1, 0, s, wait_args, nullptr));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE,
              cuLaunchKernel(wait, 1, 1, 1, 1, 1, 1, 0, s, nullptr, nullptr));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE,
              cuLaunchKernel(wait, 1, 1, 1, 1, 1, 1, 0, s, wait_args, wait_args));
    EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, cuLaunchKernel(reinterpret_cast<CUfunction>(&addr), 1, 1,
                                                        1, 1, 1, 1, 0, s, wait_args, nullptr));
    CUmodule other = nullptr;
    const char elf[] =
        "\x7f"
        "ELF and the rest of a cubin";
    EXPECT_EQ(CUDA_ERROR_NOT_SUPPORTED, cuModuleLoadData(&other, elf));
    EXPECT_EQ(CUDA_ERROR_INVALID_PTX, cuModuleLoadData(&other, "int main(void) { return 0; }"));
    const char user_ptx[] =
        ".version 7.0\n.target sm_70\n.address_size 64\n"
        ".visible .entry user_kernel(.param .u64 p)\n{\n    ret;\n}\n";
    CU_OK(cuModuleLoadData(&other, user_ptx));
    CUfunction user = nullptr;
    CU_OK(cuModuleGetFunction(&user, other, "user_kernel"));
    void *user_args[] = {&addr};
    EXPECT_EQ(CUDA_ERROR_NOT_SUPPORTED,
              cuLaunchKernel(user, 1, 1, 1, 1, 1, 1, 0, s, user_args, nullptr));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuStreamSynchronize(t));
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuStreamDestroy(t));
}

// ---- sharing --------------------------------------------------------------------------------

TEST_F(Cu, ShareWithAForkedChildThroughAFileDescriptor) {
    Mapped m;
    CU_OK(m.make(2 * kGran));
    const char hello[] = "from the parent";
    CU_OK(cuMemcpy(m.va + kGran + 10, dp(hello), sizeof hello));
    int fd = -1;
    CU_OK(cuMemExportToShareableHandle(&fd, m.h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    ASSERT_GE(fd, 0);
    int sv[2];
    ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        // The child: receives the fd, imports, maps, enables access, reads, writes back.
        close(sv[0]);
        int got = recv_fd(sv[1]);
        if (got < 0) _exit(10);
        CUmemGenericAllocationHandle h = 0;
        CUdeviceptr va = 0;
        if (cuMemImportFromShareableHandle(&h,
                                           reinterpret_cast<void *>(static_cast<uintptr_t>(got)),
                                           CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
            _exit(11);
        close(got);
        if (cuMemAddressReserve(&va, 2 * kGran, 0, 0, 0)) _exit(12);
        if (cuMemMap(va, 2 * kGran, 0, h, 0)) _exit(13);
        CUmemAccessDesc d = access(0, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
        if (cuMemSetAccess(va, 2 * kGran, &d, 1)) _exit(14);
        char buf[sizeof hello] = {};
        if (cuMemcpy(dp(buf), va + kGran + 10, sizeof buf)) _exit(15);
        if (strcmp(buf, hello) != 0) _exit(16);
        const char reply[] = "from the child";
        if (cuMemcpy(va + 100, dp(reply), sizeof reply)) _exit(17);
        if (cuMemUnmap(va, 2 * kGran) || cuMemRelease(h) || cuMemAddressFree(va, 2 * kGran))
            _exit(18);
        _exit(0);
    }
    close(sv[1]);
    ASSERT_TRUE(send_fd(sv[0], fd));
    close(sv[0]);
    close(fd);  // the caller owns the exported descriptor
    int status = reap(pid);
    ASSERT_TRUE(WIFEXITED(status)) << "status " << status;
    ASSERT_EQ(0, WEXITSTATUS(status));
    char back[32] = {};
    CU_OK(cuMemcpy(dp(back), m.va + 100, 15));
    EXPECT_STREQ("from the child", back);
}

TEST_F(Cu, ExportAndImportRefuseMisuse) {
    Mapped plain;
    CU_OK(plain.make(kGran, false));
    int fd = -1;
    EXPECT_EQ(
        CUDA_ERROR_INVALID_VALUE,
        cuMemExportToShareableHandle(&fd, plain.h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    Mapped m;
    CU_OK(m.make(kGran));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE,
              cuMemExportToShareableHandle(&fd, m.h, CU_MEM_HANDLE_TYPE_NONE, 0));
    EXPECT_EQ(
        CUDA_ERROR_INVALID_VALUE,
        cuMemExportToShareableHandle(&fd, m.h + 999, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    int pipefd[2];
    ASSERT_EQ(0, pipe(pipefd));
    CUmemGenericAllocationHandle h = 0;
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE,
              cuMemImportFromShareableHandle(
                  &h, reinterpret_cast<void *>(static_cast<uintptr_t>(pipefd[0])),
                  CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    close(pipefd[0]);
    close(pipefd[1]);
    // In the same process an import gives a second handle over the same memory.
    CU_OK(cuMemExportToShareableHandle(&fd, m.h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    CU_OK(cuMemImportFromShareableHandle(&h, reinterpret_cast<void *>(static_cast<uintptr_t>(fd)),
                                         CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    close(fd);
    CUdeviceptr va = 0;
    CU_OK(cuMemAddressReserve(&va, kGran, 0, 0, 0));
    CU_OK(cuMemMap(va, kGran, 0, h, 0));
    CUmemAccessDesc d = access(0, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    CU_OK(cuMemSetAccess(va, kGran, &d, 1));
    uint64_t v = 0x1122334455667788ull, back = 0;
    CU_OK(cuMemcpy(m.va + 64, dp(&v), 8));
    CU_OK(cuMemcpy(dp(&back), va + 64, 8));
    EXPECT_EQ(v, back);
    CU_OK(cuMemUnmap(va, kGran));
    CU_OK(cuMemRelease(h));
    CU_OK(cuMemAddressFree(va, kGran));
}

// ---- variables (each group under its own ctest, see CMakeLists.txt) -------------------------

class Strict : public Cu {};

// A child touching `p` from the CPU must die with SIGSEGV.
void expect_cpu_access_faults(CUdeviceptr p) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        volatile char c = *reinterpret_cast<volatile char *>(p);
        (void)c;
        _exit(0);
    }
    int status = reap(pid);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the child read device memory: status " << status;
    EXPECT_EQ(SIGSEGV, WTERMSIG(status));
}

TEST_F(Strict, DeviceMemoryIsNotCpuMemory) {
    Mapped m;
    CU_OK(m.make(kGran));
    CUdeviceptr blk = 0;
    CU_OK(cuMemAlloc(&blk, 100));
    const char text[] = "through the driver";
    CU_OK(cuMemcpy(m.va, dp(text), sizeof text));
    CU_OK(cuMemcpy(blk, m.va, sizeof text));
    char back[sizeof text] = {};
    CU_OK(cuMemcpy(dp(back), blk, sizeof back));
    EXPECT_STREQ(text, back);
    CUstream s = nullptr;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamWriteValue32(s, m.va + 256, 7, 0));
    CU_OK(cuStreamWaitValue32(s, m.va + 256, 7, CU_STREAM_WAIT_VALUE_EQ));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuStreamDestroy(s));
    expect_cpu_access_faults(m.va);
    expect_cpu_access_faults(blk);
    CU_OK(cuMemFree(blk));
}

class Fault : public Cu {};

// CUDA_STANDIN_FAIL=cuMemCreate:2,cuMemImportFromShareableHandle,cuMemAlloc:1,cuStreamCreate:1
TEST_F(Fault, ChosenCallsFailWithTheirNaturalCodes) {
    CUmemAllocationProp prop = pinned(0, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    CUmemGenericAllocationHandle a = 0, b = 0, c = 0;
    CU_OK(cuMemCreate(&a, kGran, &prop, 0));
    EXPECT_EQ(CUDA_ERROR_OUT_OF_MEMORY, cuMemCreate(&b, kGran, &prop, 0));
    CU_OK(cuMemCreate(&c, kGran, &prop, 0));
    int fd = -1;
    CU_OK(cuMemExportToShareableHandle(&fd, a, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    void *os = reinterpret_cast<void *>(static_cast<uintptr_t>(fd));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE,
              cuMemImportFromShareableHandle(&b, os, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    CU_OK(cuMemImportFromShareableHandle(&b, os, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    close(fd);
    CUdeviceptr p = 0;
    EXPECT_EQ(CUDA_ERROR_OUT_OF_MEMORY, cuMemAlloc(&p, 64));
    CU_OK(cuMemAlloc(&p, 64));
    CUstream s = nullptr;
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuStreamCreate(&s, 0));
    CU_OK(cuStreamCreate(&s, 0));
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFree(p));
    CU_OK(cuMemRelease(a));
    CU_OK(cuMemRelease(b));
    CU_OK(cuMemRelease(c));
}

class Capacity : public Cu {};

// CUDA_STANDIN_HBM_BYTES=8M
TEST_F(Capacity, AllocationsPastTheDevicesMemoryFail) {
    CUmemAllocationProp prop = pinned(0, CU_MEM_HANDLE_TYPE_NONE);
    CUmemGenericAllocationHandle a = 0, b = 0;
    CU_OK(cuMemCreate(&a, 4 * kGran, &prop, 0));
    EXPECT_EQ(CUDA_ERROR_OUT_OF_MEMORY, cuMemCreate(&b, kGran, &prop, 0));
    CUdeviceptr p = 0;
    EXPECT_EQ(CUDA_ERROR_OUT_OF_MEMORY, cuMemAlloc(&p, 1));
    // Mapped memory stays charged after its handle is released, until unmapped.
    CUdeviceptr va = 0;
    CU_OK(cuMemAddressReserve(&va, 4 * kGran, 0, 0, 0));
    CU_OK(cuMemMap(va, 4 * kGran, 0, a, 0));
    CU_OK(cuMemRelease(a));
    EXPECT_EQ(CUDA_ERROR_OUT_OF_MEMORY, cuMemCreate(&b, kGran, &prop, 0));
    CU_OK(cuMemUnmap(va, 4 * kGran));
    CU_OK(cuMemAddressFree(va, 4 * kGran));
    CU_OK(cuMemCreate(&b, 2 * kGran, &prop, 0));
    CU_OK(cuMemAlloc(&p, 2 * kGran));
    EXPECT_EQ(CUDA_ERROR_OUT_OF_MEMORY, cuMemAlloc(&va, 1));
    CU_OK(cuMemFree(p));
    CU_OK(cuMemRelease(b));
}

class Devices : public Cu {};

// CUDA_STANDIN_DEVICES=4 CUDA_VISIBLE_DEVICES=3,1,9,0: the list ends at 9, two devices.
TEST_F(Devices, VisibleDevicesSelectAndRenumber) {
    int n = 0;
    CU_OK(cuDeviceGetCount(&n));
    EXPECT_EQ(2, n);
    CUdevice d = -1;
    EXPECT_EQ(CUDA_ERROR_INVALID_DEVICE, cuDeviceGet(&d, 2));
    CUcontext one = nullptr;
    CU_OK(cuDevicePrimaryCtxRetain(&one, 1));
    EXPECT_NE(ctx_, one);
    CU_OK(cuCtxSetCurrent(one));
    CU_OK(cuCtxGetDevice(&d));
    EXPECT_EQ(1, d);
    // Device 1's memory, shared and imported back.
    Mapped m;
    CU_OK(m.make(kGran, true, true, 1));
    int fd = -1;
    CU_OK(cuMemExportToShareableHandle(&fd, m.h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    CUmemGenericAllocationHandle h = 0;
    CU_OK(cuMemImportFromShareableHandle(&h, reinterpret_cast<void *>(static_cast<uintptr_t>(fd)),
                                         CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    close(fd);
    CU_OK(cuMemRelease(h));
    // A stream belongs to its context: work from another context's thread is refused.
    CUstream s = nullptr;
    CU_OK(cuStreamCreate(&s, 0));
    CU_OK(cuCtxSetCurrent(ctx_));
    EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, cuMemsetD8Async(m.va, 0, 8, s));
    CU_OK(cuCtxSetCurrent(one));
    CU_OK(cuStreamDestroy(s));
    m.drop();
    CU_OK(cuCtxSetCurrent(ctx_));
    CU_OK(cuDevicePrimaryCtxRelease(1));
}

class Timeout : public Cu {};

// CUDA_STANDIN_WAIT_TIMEOUT=1
TEST_F(Timeout, AWaitNeverSatisfiedFailsItsStream) {
    Mapped m;
    CU_OK(m.make(kGran));
    CU_OK(cuMemsetD8(m.va, 0xff, 8));
    CUstream s = nullptr;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    // ~(0xffffffff | 0) is 0 in 32 bits: NOR is never satisfied.
    CU_OK(cuStreamWaitValue32(s, m.va, 0, CU_STREAM_WAIT_VALUE_NOR));
    auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(CUDA_ERROR_TIMEOUT, cuStreamSynchronize(s));
    auto took = std::chrono::steady_clock::now() - t0;
    EXPECT_GE(took, std::chrono::milliseconds(900));
    EXPECT_LT(took, std::chrono::seconds(10));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuStreamDestroy(s));
}

}  // namespace

int main(int argc, char **argv) {
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
