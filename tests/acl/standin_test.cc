// standin_test.cc: the ACL stand-in's own tests (ctest acl.standin*, tests/acl/CMakeLists.txt).
// Each test checks what ACL documents for the calls it covers, and that misuse comes back as
// ACL's code with one `acl stand-in:` line. Strict.*, Fault.* and Capacity.* need the variables
// their ctest entries set and skip without them. A watchdog turns a hang into a failure; forked
// children have their own.
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "acl_standin.h"

namespace {

constexpr size_t kG = size_t{2} << 20;

class Watchdog : public testing::EmptyTestEventListener {
    void OnTestStart(const testing::TestInfo &) override { alarm(60); }
    void OnTestEnd(const testing::TestInfo &) override { alarm(0); }
};

void init_device(int32_t dev = 0) {
    aclError rc = aclInit(nullptr);
    ASSERT_TRUE(rc == ACL_SUCCESS || rc == ACL_ERROR_REPEAT_INITIALIZE) << rc;
    ASSERT_EQ(aclrtSetDevice(dev), ACL_SUCCESS);
}

std::string recent() {
    const char *m = aclGetRecentErrMsg();
    return m ? m : "";
}

aclrtPhysicalMemProp prop_for(int32_t dev) {
    aclrtPhysicalMemProp p{};
    p.handleType = ACL_MEM_HANDLE_TYPE_NONE;
    p.allocationType = ACL_MEM_ALLOCATION_TYPE_PINNED;
    p.memAttr = ACL_HBM_MEM_HUGE;
    p.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
    p.location.id = static_cast<uint32_t>(dev);
    return p;
}

// A reserved range with physical memory mapped at its start.
struct Mapping {
    void *va = nullptr;
    aclrtDrvMemHandle handle = nullptr;
    size_t size = 0;
};

aclError map_new(Mapping *m, size_t size, size_t reserve = 0, int32_t dev = 0) {
    aclrtPhysicalMemProp prop = prop_for(dev);
    m->size = size;
    if (aclError rc = aclrtReserveMemAddress(&m->va, reserve ? reserve : size, 0, nullptr, 0))
        return rc;
    if (aclError rc = aclrtMallocPhysical(&m->handle, size, &prop, 0)) return rc;
    return aclrtMapMem(m->va, size, 0, m->handle, 0);
}

void unmap_free(const Mapping &m) {
    EXPECT_EQ(aclrtUnmapMem(m.va), ACL_SUCCESS);
    EXPECT_EQ(aclrtFreePhysical(m.handle), ACL_SUCCESS);
    EXPECT_EQ(aclrtReleaseMemAddress(m.va), ACL_SUCCESS);
}

// Waits for a forked child for at most timeout_s; kills it and returns -1 after that.
int wait_child(pid_t pid, int timeout_s) {
    for (int i = 0; i < timeout_s * 100; ++i) {
        int status = 0;
        if (waitpid(pid, &status, WNOHANG) == pid) return status;
        usleep(10000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    return -1;
}

// Runs fn in a forked child (its return value is the exit status) under its own watchdog.
int in_child(const std::function<int()> &fn, int timeout_s = 20) {
    fflush(nullptr);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(static_cast<unsigned>(timeout_s));
        int rc = fn();
        fflush(nullptr);
        _exit(rc);
    }
    return wait_child(pid, timeout_s + 5);
}

#define CHILD_CHECK(cond)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "child: line %d: %s is false\n", __LINE__, #cond);                     \
            return __LINE__ % 200 + 1;                                                             \
        }                                                                                          \
    } while (0)

// A host function that holds its stream until opened (at most 10 s, so a failing test ends).
struct Gate {
    std::atomic<bool> open{false};
    std::atomic<bool> entered{false};
};

void hold_gate(void *arg) {
    auto *g = static_cast<Gate *>(arg);
    g->entered = true;
    for (int i = 0; i < 1000 && !g->open.load(); ++i) usleep(10000);
}

bool strict_mode() {
    const char *v = getenv("ACL_STANDIN_STRICT");
    return v && strcmp(v, "1") == 0;
}

// ---- start-up, devices, contexts ------------------------------------------------------------

TEST(Init, OrderRepeatAndVariables) {
    int status = in_child([] {
        aclFinalize();  // whatever this process did before, start from "not initialised"
        CHILD_CHECK(aclrtSetDevice(0) == ACL_ERROR_UNINITIALIZE);
        CHILD_CHECK(recent().find("before aclInit") != std::string::npos);
        CHILD_CHECK(aclInit(nullptr) == ACL_SUCCESS);
        CHILD_CHECK(aclInit(nullptr) == ACL_ERROR_REPEAT_INITIALIZE);
        CHILD_CHECK(aclFinalize() == ACL_SUCCESS);
        CHILD_CHECK(aclFinalize() == ACL_ERROR_REPEAT_FINALIZE);
        CHILD_CHECK(aclInit("/nonexistent/acl.json") == ACL_ERROR_INVALID_PARAM);
        setenv("ACL_STANDIN_FAIL", "aclrtNoSuchCall", 1);
        CHILD_CHECK(aclInit(nullptr) == ACL_ERROR_INVALID_PARAM);
        CHILD_CHECK(recent().find("\"aclrtNoSuchCall\" is not an ACL call") != std::string::npos);
        setenv("ACL_STANDIN_FAIL", "aclrtMalloc:0", 1);
        CHILD_CHECK(aclInit(nullptr) == ACL_ERROR_INVALID_PARAM);
        unsetenv("ACL_STANDIN_FAIL");
        setenv("ACL_STANDIN_DEVICES", "many", 1);
        CHILD_CHECK(aclInit(nullptr) == ACL_ERROR_INVALID_PARAM);
        CHILD_CHECK(recent().find("ACL_STANDIN_DEVICES=\"many\"") != std::string::npos);
        setenv("ACL_STANDIN_DEVICES", "0", 1);
        CHILD_CHECK(aclInit(nullptr) == ACL_SUCCESS);
        uint32_t count = 99;
        CHILD_CHECK(aclrtGetDeviceCount(&count) == ACL_ERROR_RT_NO_DEVICE && count == 99);
        CHILD_CHECK(aclrtSetDevice(0) == ACL_ERROR_RT_NO_DEVICE);
        CHILD_CHECK(aclFinalize() == ACL_SUCCESS);
        setenv("ACL_STANDIN_DEVICES", "2", 1);
        CHILD_CHECK(aclInit(nullptr) == ACL_SUCCESS);
        CHILD_CHECK(aclrtGetDeviceCount(&count) == ACL_SUCCESS && count == 2);
        CHILD_CHECK(aclrtSetDevice(2) == ACL_ERROR_RT_INVALID_DEVICEID);
        CHILD_CHECK(aclFinalize() == ACL_SUCCESS);
        unsetenv("ACL_STANDIN_DEVICES");  // 8 devices, of which the process sees two
        setenv("ASCEND_RT_VISIBLE_DEVICES", "6,3", 1);
        CHILD_CHECK(aclInit(nullptr) == ACL_SUCCESS);
        CHILD_CHECK(aclrtGetDeviceCount(&count) == ACL_SUCCESS && count == 2);
        CHILD_CHECK(aclFinalize() == ACL_SUCCESS);
        setenv("ASCEND_RT_VISIBLE_DEVICES", "1,8", 1);
        CHILD_CHECK(aclInit(nullptr) == ACL_ERROR_INVALID_PARAM);
        CHILD_CHECK(recent().find("\"8\" is not one of devices 0 to 7") != std::string::npos);
        return 0;
    });
    ASSERT_TRUE(WIFEXITED(status)) << status;
    EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(Device, SetGetResetAndContexts) {
    ASSERT_NO_FATAL_FAILURE(init_device(0));
    uint32_t count = 0;
    ASSERT_EQ(aclrtGetDeviceCount(&count), ACL_SUCCESS);
    if (!getenv("ACL_STANDIN_DEVICES") && !getenv("ASCEND_RT_VISIBLE_DEVICES"))
        EXPECT_EQ(count, 8u);
    int32_t dev = -1;
    ASSERT_EQ(aclrtGetDevice(&dev), ACL_SUCCESS);
    EXPECT_EQ(dev, 0);
    EXPECT_EQ(aclrtSetDevice(static_cast<int32_t>(count)), ACL_ERROR_RT_INVALID_DEVICEID);
    EXPECT_EQ(aclrtSetDevice(-1), ACL_ERROR_RT_INVALID_DEVICEID);

    // A thread without a device has no context: queries and memory/stream calls say so.
    std::thread([] {
        int32_t d = -1;
        void *p = nullptr;
        aclrtStream s = nullptr;
        EXPECT_EQ(aclrtGetDevice(&d), ACL_ERROR_RT_CONTEXT_NULL);
        EXPECT_EQ(aclrtMalloc(&p, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_RT_CONTEXT_NULL);
        EXPECT_EQ(aclrtCreateStream(&s), ACL_ERROR_RT_CONTEXT_NULL);
        EXPECT_EQ(aclrtMemcpy(&d, 4, &d, 4, ACL_MEMCPY_HOST_TO_HOST), ACL_ERROR_RT_CONTEXT_NULL);
    }).join();

    // Device 1's context, bound to another thread.
    ASSERT_EQ(aclrtSetDevice(1), ACL_SUCCESS);
    aclrtContext ctx1 = nullptr;
    ASSERT_EQ(aclrtGetCurrentContext(&ctx1), ACL_SUCCESS);
    ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
    std::thread([ctx1] {
        int32_t d = -1;
        EXPECT_EQ(aclrtSetCurrentContext(ctx1), ACL_SUCCESS);
        EXPECT_EQ(aclrtGetDevice(&d), ACL_SUCCESS);
        EXPECT_EQ(d, 1);
    }).join();
    int dummy = 0;
    EXPECT_EQ(aclrtSetCurrentContext(&dummy), ACL_ERROR_INVALID_PARAM);

    int32_t pid = 0;
    ASSERT_EQ(aclrtDeviceGetBareTgid(&pid), ACL_SUCCESS);
    EXPECT_EQ(pid, getpid());

    int32_t can = -1;
    ASSERT_EQ(aclrtDeviceCanAccessPeer(&can, 0, 1), ACL_SUCCESS);
    EXPECT_EQ(can, 1);
    ASSERT_EQ(aclrtDeviceCanAccessPeer(&can, 1, 1), ACL_SUCCESS);
    EXPECT_EQ(can, 0);
    EXPECT_EQ(aclrtDeviceCanAccessPeer(&can, 0, static_cast<int32_t>(count)),
              ACL_ERROR_RT_INVALID_DEVICEID);
    EXPECT_EQ(aclrtDeviceEnablePeerAccess(1, 0), ACL_SUCCESS);
    EXPECT_EQ(aclrtDeviceEnablePeerAccess(1, 0), ACL_SUCCESS);
    EXPECT_EQ(aclrtDeviceEnablePeerAccess(0, 0), ACL_ERROR_RT_INVALID_DEVICEID);
    EXPECT_EQ(aclrtDeviceEnablePeerAccess(1, 1), ACL_ERROR_INVALID_PARAM);

    // The last reset of device 1 destroys its context: a thread bound to it has none.
    ASSERT_EQ(aclrtResetDevice(1), ACL_SUCCESS);
    std::thread([ctx1] {
        int32_t d = -1;
        EXPECT_EQ(aclrtSetCurrentContext(ctx1), ACL_ERROR_RT_CONTEXT_NULL);
        EXPECT_EQ(aclrtGetDevice(&d), ACL_ERROR_RT_CONTEXT_NULL);
    }).join();
    ASSERT_EQ(aclrtGetDevice(&dev), ACL_SUCCESS);
    EXPECT_EQ(dev, 0);
}

// ---- virtual memory -------------------------------------------------------------------------

TEST(Vmm, ReserveMapUnmapRules) {
    ASSERT_NO_FATAL_FAILURE(init_device(0));
    aclrtPhysicalMemProp prop = prop_for(0);
    size_t g = 0;
    ASSERT_EQ(aclrtMemGetAllocationGranularity(&prop, ACL_RT_MEM_ALLOC_GRANULARITY_RECOMMENDED, &g),
              ACL_SUCCESS);
    EXPECT_EQ(g, kG);
    ASSERT_EQ(aclrtMemGetAllocationGranularity(&prop, ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM, &g),
              ACL_SUCCESS);
    EXPECT_EQ(g, kG);
    EXPECT_EQ(
        aclrtMemGetAllocationGranularity(&prop, static_cast<aclrtMemGranularityOptions>(7), &g),
        ACL_ERROR_INVALID_PARAM);

    void *va = nullptr;
    int local = 0;
    EXPECT_EQ(aclrtReserveMemAddress(&va, kG / 2, 0, nullptr, 0), ACL_ERROR_INVALID_PARAM);
    EXPECT_EQ(aclrtReserveMemAddress(&va, kG, 0, &local, 0), ACL_ERROR_INVALID_PARAM);
    EXPECT_EQ(aclrtReserveMemAddress(&va, kG, 0, nullptr, 1), ACL_ERROR_INVALID_PARAM);
    EXPECT_EQ(aclrtReserveMemAddress(&va, kG, 3, nullptr, 0), ACL_ERROR_INVALID_PARAM);
    ASSERT_EQ(aclrtReserveMemAddress(&va, 4 * kG, 0, nullptr, 0), ACL_SUCCESS);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(va) % kG, 0u);
    char *base = static_cast<char *>(va);

    aclrtDrvMemHandle h = nullptr;
    EXPECT_EQ(aclrtMallocPhysical(&h, kG / 2, &prop, 0), ACL_ERROR_INVALID_PARAM);
    aclrtPhysicalMemProp other = prop_for(1);
    EXPECT_EQ(aclrtMallocPhysical(&h, kG, &other, 0), ACL_ERROR_INVALID_DEVICE);
    other = prop;
    other.location.type = ACL_MEM_LOCATION_TYPE_HOST;
    EXPECT_EQ(aclrtMallocPhysical(&h, kG, &other, 0), ACL_ERROR_INVALID_PARAM);
    other = prop;
    other.handleType = static_cast<aclrtMemHandleType>(2);
    EXPECT_EQ(aclrtMallocPhysical(&h, kG, &other, 0), ACL_ERROR_INVALID_PARAM);
    ASSERT_EQ(aclrtMallocPhysical(&h, 2 * kG, &prop, 0), ACL_SUCCESS);

    EXPECT_EQ(aclrtMapMem(&local, 2 * kG, 0, h, 0), ACL_ERROR_INVALID_PARAM);   // misaligned
    EXPECT_EQ(aclrtMapMem(base + 4096, kG, 0, h, 0), ACL_ERROR_INVALID_PARAM);  // misaligned
    EXPECT_EQ(aclrtMapMem(base + 3 * kG, 2 * kG, 0, h, 0), ACL_ERROR_RT_PARAM_INVALID);  // past
    EXPECT_EQ(aclrtMapMem(base, 2 * kG, kG, h, 0), ACL_ERROR_INVALID_PARAM);  // past the handle
    EXPECT_EQ(aclrtMapMem(base, 2 * kG, 0, h, 1), ACL_ERROR_INVALID_PARAM);
    ASSERT_EQ(aclrtMapMem(base, 2 * kG, 0, h, 0), ACL_SUCCESS);
    EXPECT_EQ(aclrtMapMem(base + kG, kG, 0, h, 0), ACL_ERROR_RT_PARAM_INVALID);  // overlap
    ASSERT_EQ(aclrtMapMem(base + 2 * kG, 2 * kG, 0, h, 0), ACL_SUCCESS);         // an alias

    // Both mappings show the same physical memory.
    const char text[] = "same physical memory";
    ASSERT_EQ(aclrtMemcpy(base + 100, sizeof text, text, sizeof text, ACL_MEMCPY_HOST_TO_DEVICE),
              ACL_SUCCESS);
    char back[sizeof text] = {};
    ASSERT_EQ(
        aclrtMemcpy(back, sizeof back, base + 2 * kG + 100, sizeof text, ACL_MEMCPY_DEVICE_TO_HOST),
        ACL_SUCCESS);
    EXPECT_STREQ(back, text);
    if (!strict_mode()) EXPECT_STREQ(base + 2 * kG + 100, text);  // the CPU's view

    EXPECT_EQ(aclrtFreePhysical(h), ACL_ERROR_RT_PARAM_INVALID);        // still mapped
    EXPECT_EQ(aclrtReleaseMemAddress(va), ACL_ERROR_RT_PARAM_INVALID);  // still mapped
    EXPECT_EQ(aclrtReleaseMemAddress(base + kG), ACL_ERROR_INVALID_PARAM);
    EXPECT_EQ(aclrtUnmapMem(base + kG), ACL_ERROR_RT_PARAM_INVALID);  // not a mapping's start
    ASSERT_EQ(aclrtUnmapMem(base), ACL_SUCCESS);
    EXPECT_EQ(aclrtUnmapMem(base), ACL_ERROR_RT_PARAM_INVALID);
    ASSERT_EQ(aclrtUnmapMem(base + 2 * kG), ACL_SUCCESS);
    ASSERT_EQ(aclrtFreePhysical(h), ACL_SUCCESS);
    EXPECT_EQ(aclrtFreePhysical(h), ACL_ERROR_RT_INVALID_HANDLE);
    EXPECT_EQ(aclrtMapMem(base, 2 * kG, 0, h, 0), ACL_ERROR_RT_INVALID_HANDLE);
    ASSERT_EQ(aclrtReleaseMemAddress(va), ACL_SUCCESS);
    EXPECT_EQ(aclrtReleaseMemAddress(va), ACL_ERROR_INVALID_PARAM);

    if (!getenv("ACL_STANDIN_HBM_BYTES")) {  // 16 GiB a device by default
        EXPECT_EQ(aclrtMallocPhysical(&h, (size_t{16} << 30) + kG, &prop, 0),
                  ACL_ERROR_RT_MEMORY_ALLOCATION);
    }
}

// aclrtMemRetainAllocationHandle: a reference to the memory mapped at a mapping's start, which
// keeps it after its allocation is freed; anywhere else refused.
TEST(Vmm, RetainKeepsPhysicalMemory) {
    ASSERT_NO_FATAL_FAILURE(init_device(0));
    Mapping m;
    ASSERT_EQ(map_new(&m, kG), ACL_SUCCESS);
    char *base = static_cast<char *>(m.va);
    aclrtDrvMemHandle h = nullptr;
    EXPECT_EQ(aclrtMemRetainAllocationHandle(base + 4096, &h), ACL_ERROR_RT_PARAM_INVALID);
    int host = 0;
    EXPECT_EQ(aclrtMemRetainAllocationHandle(&host, &h), ACL_ERROR_RT_PARAM_INVALID);
    EXPECT_EQ(aclrtMemRetainAllocationHandle(base, nullptr), ACL_ERROR_INVALID_PARAM);
    ASSERT_EQ(aclrtMemRetainAllocationHandle(base, &h), ACL_SUCCESS);
    EXPECT_EQ(h, m.handle);
    const char text[] = "retained";
    ASSERT_EQ(aclrtMemcpy(base, sizeof text, text, sizeof text, ACL_MEMCPY_HOST_TO_DEVICE),
              ACL_SUCCESS);
    // The allocation's reference goes while mapped: the retained one keeps the memory.
    ASSERT_EQ(aclrtFreePhysical(m.handle), ACL_SUCCESS);
    char back[sizeof text] = {};
    ASSERT_EQ(aclrtMemcpy(back, sizeof back, base, sizeof text, ACL_MEMCPY_DEVICE_TO_HOST),
              ACL_SUCCESS);
    EXPECT_STREQ(back, text);
    EXPECT_EQ(aclrtFreePhysical(h), ACL_ERROR_RT_PARAM_INVALID);  // the last, still mapped
    ASSERT_EQ(aclrtUnmapMem(base), ACL_SUCCESS);
    ASSERT_EQ(aclrtFreePhysical(h), ACL_SUCCESS);
    EXPECT_EQ(aclrtFreePhysical(h), ACL_ERROR_RT_INVALID_HANDLE);
    ASSERT_EQ(aclrtReleaseMemAddress(m.va), ACL_SUCCESS);
}

// ---- copies ---------------------------------------------------------------------------------

TEST(Copy, KindsAndRangesAreChecked) {
    ASSERT_NO_FATAL_FAILURE(init_device(0));
    Mapping m;
    ASSERT_EQ(map_new(&m, kG, 2 * kG), ACL_SUCCESS);  // the second granule stays unmapped
    char *dev = static_cast<char *>(m.va);
    std::vector<char> host(4096, 'h'), back(4096, 0);

    ASSERT_EQ(aclrtMemcpy(dev, kG, host.data(), 4096, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
    ASSERT_EQ(aclrtMemcpy(dev + 8192, 4096, dev, 4096, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_SUCCESS);
    ASSERT_EQ(aclrtMemcpy(back.data(), 4096, dev + 8192, 4096, ACL_MEMCPY_DEVICE_TO_HOST),
              ACL_SUCCESS);
    EXPECT_EQ(back, host);
    EXPECT_EQ(aclrtMemcpy(back.data(), 4096, host.data(), 4096, ACL_MEMCPY_HOST_TO_HOST),
              ACL_SUCCESS);
    EXPECT_EQ(aclrtMemcpy(back.data(), 4096, dev, 4096, ACL_MEMCPY_DEFAULT), ACL_SUCCESS);

    // Wrong kinds: the code, one line on stderr naming the call and the address, the message.
    testing::internal::CaptureStderr();
    EXPECT_EQ(aclrtMemcpy(back.data(), 4096, host.data(), 4096, ACL_MEMCPY_HOST_TO_DEVICE),
              ACL_ERROR_RT_PARAM_INVALID);
    std::string err = testing::internal::GetCapturedStderr();
    char addr[32];
    snprintf(addr, sizeof addr, "%p", static_cast<void *>(back.data()));
    EXPECT_EQ(err.rfind("acl stand-in: aclrtMemcpy: kind=ACL_MEMCPY_HOST_TO_DEVICE but dst=", 0),
              0u)
        << err;
    EXPECT_NE(err.find(addr), std::string::npos) << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    std::string msg = recent();
    EXPECT_NE(msg.find("aclrtMemcpy: kind=ACL_MEMCPY_HOST_TO_DEVICE"), std::string::npos) << msg;
    EXPECT_EQ(aclGetRecentErrMsg(), nullptr);  // read once

    EXPECT_EQ(aclrtMemcpy(back.data(), 4096, host.data(), 4096, ACL_MEMCPY_DEVICE_TO_HOST),
              ACL_ERROR_RT_PARAM_INVALID);
    EXPECT_EQ(aclrtMemcpy(dev, 4096, host.data(), 4096, ACL_MEMCPY_HOST_TO_HOST),
              ACL_ERROR_RT_PARAM_INVALID);
    EXPECT_EQ(aclrtMemcpy(dev, 4096, host.data(), 4096, ACL_MEMCPY_DEVICE_TO_DEVICE),
              ACL_ERROR_RT_PARAM_INVALID);
    EXPECT_EQ(aclrtMemcpy(dev, 4096, host.data(), 4096, static_cast<aclrtMemcpyKind>(9)),
              ACL_ERROR_INVALID_PARAM);
    EXPECT_EQ(aclrtMemcpy(dev, 100, host.data(), 101, ACL_MEMCPY_HOST_TO_DEVICE),
              ACL_ERROR_INVALID_PARAM);  // count > destMax
    EXPECT_EQ(aclrtMemcpy(nullptr, 4, host.data(), 4, ACL_MEMCPY_HOST_TO_DEVICE),
              ACL_ERROR_INVALID_PARAM);

    // Past the end of the block, into the unmapped granule, host running into device memory.
    EXPECT_EQ(aclrtMemcpy(dev + kG - 16, 32, host.data(), 32, ACL_MEMCPY_HOST_TO_DEVICE),
              ACL_ERROR_RT_PARAM_INVALID);
    EXPECT_NE(recent().find("runs past the end of the device block"), std::string::npos);
    EXPECT_EQ(aclrtMemcpy(dev + kG, 32, host.data(), 32, ACL_MEMCPY_HOST_TO_DEVICE),
              ACL_ERROR_RT_PARAM_INVALID);
    EXPECT_NE(recent().find("is not mapped"), std::string::npos);
    EXPECT_EQ(aclrtMemcpy(back.data(), 32, dev - 16, 32, ACL_MEMCPY_DEFAULT),
              ACL_ERROR_RT_PARAM_INVALID);
    EXPECT_NE(recent().find("runs into device memory"), std::string::npos);

    // Memset: device or host memory, inside one block.
    ASSERT_EQ(aclrtMemset(dev, 4096, 0x5a, 4096), ACL_SUCCESS);
    ASSERT_EQ(aclrtMemcpy(back.data(), 4096, dev, 4096, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    EXPECT_EQ(back, std::vector<char>(4096, 0x5a));
    ASSERT_EQ(aclrtMemset(back.data(), 4096, 1, 4096), ACL_SUCCESS);
    EXPECT_EQ(back[4095], 1);
    EXPECT_EQ(aclrtMemset(dev + kG - 8, 16, 0, 16), ACL_ERROR_RT_PARAM_INVALID);
    EXPECT_EQ(aclrtMemset(dev, 8, 0, 16), ACL_ERROR_INVALID_PARAM);
    unmap_free(m);

    // aclrtMalloc blocks are device memory of their requested size.
    void *blk = nullptr;
    ASSERT_EQ(aclrtMalloc(&blk, 100, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    EXPECT_EQ(aclrtMemcpy(blk, 100, host.data(), 100, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
    EXPECT_EQ(aclrtMemcpy(blk, 101, host.data(), 101, ACL_MEMCPY_HOST_TO_DEVICE),
              ACL_ERROR_RT_PARAM_INVALID);
    EXPECT_EQ(
        aclrtMemcpy(static_cast<char *>(blk) + 100, 1, host.data(), 1, ACL_MEMCPY_HOST_TO_DEVICE),
        ACL_ERROR_RT_PARAM_INVALID);  // inside the page, past the block
    EXPECT_EQ(aclrtFree(static_cast<char *>(blk) + 1), ACL_ERROR_INVALID_PARAM);
    EXPECT_EQ(aclrtFree(blk), ACL_SUCCESS);
    EXPECT_EQ(aclrtFree(blk), ACL_ERROR_INVALID_PARAM);
    EXPECT_EQ(aclrtMalloc(&blk, 0, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);

    // aclrtMallocHost: pinned host memory, host for the kinds.
    void *pinned = nullptr;
    ASSERT_EQ(aclrtMallocHost(&pinned, 4096), ACL_SUCCESS);
    EXPECT_EQ(aclrtMemcpy(pinned, 4096, host.data(), 4096, ACL_MEMCPY_HOST_TO_HOST), ACL_SUCCESS);
    EXPECT_EQ(aclrtFreeHost(host.data()), ACL_ERROR_INVALID_PARAM);
    EXPECT_EQ(aclrtFreeHost(pinned), ACL_SUCCESS);
}

// ---- streams --------------------------------------------------------------------------------

struct Probe {
    const char *dev = nullptr;
    std::atomic<int> seen{-1};
};

void sleep_then_look(void *arg) {
    auto *p = static_cast<Probe *>(arg);
    usleep(300 * 1000);
    char first = 0;
    aclrtMemcpy(&first, 1, p->dev, 1, ACL_MEMCPY_DEVICE_TO_HOST);
    p->seen = static_cast<unsigned char>(first);
}

TEST(Stream, CopyAfterSleepingHostFunctionWaitsForIt) {
    ASSERT_NO_FATAL_FAILURE(init_device(0));
    aclrtStream s = nullptr;
    ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
    void *dev = nullptr;
    ASSERT_EQ(aclrtMalloc(&dev, 4096, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    ASSERT_EQ(aclrtMemset(dev, 4096, 0, 4096), ACL_SUCCESS);
    std::vector<char> src(4096, static_cast<char>(0xab));
    Probe probe;
    probe.dev = static_cast<const char *>(dev);

    ASSERT_EQ(aclrtLaunchHostFunc(s, sleep_then_look, &probe), ACL_SUCCESS);
    ASSERT_EQ(aclrtMemcpyAsync(dev, 4096, src.data(), 4096, ACL_MEMCPY_HOST_TO_DEVICE, s),
              ACL_SUCCESS);
    char now = 1;
    ASSERT_EQ(aclrtMemcpy(&now, 1, dev, 1, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    EXPECT_EQ(now, 0);  // the copy waits behind the sleeping host function
    ASSERT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
    EXPECT_EQ(probe.seen.load(), 0);  // the host function ran before the copy
    ASSERT_EQ(aclrtMemcpy(&now, 1, dev, 1, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    EXPECT_EQ(static_cast<unsigned char>(now), 0xab);
    ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
    ASSERT_EQ(aclrtFree(dev), ACL_SUCCESS);
}

TEST(Stream, SynchronizeReturnsTheFirstAsyncErrorOnce) {
    ASSERT_NO_FATAL_FAILURE(init_device(0));
    aclrtStream s = nullptr;
    ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
    Mapping m;
    ASSERT_EQ(map_new(&m, kG), ACL_SUCCESS);
    std::vector<char> back(64);
    Gate gate;
    ASSERT_EQ(aclrtLaunchHostFunc(s, hold_gate, &gate), ACL_SUCCESS);
    ASSERT_EQ(aclrtMemcpyAsync(back.data(), 64, m.va, 64, ACL_MEMCPY_DEVICE_TO_HOST, s),
              ACL_SUCCESS);
    // Unmapped before the stream reaches the copy: the copy fails when it runs.
    ASSERT_EQ(aclrtUnmapMem(m.va), ACL_SUCCESS);
    gate.open = true;
    EXPECT_EQ(aclrtSynchronizeStream(s), ACL_ERROR_RT_PARAM_INVALID);
    std::string msg = recent();
    EXPECT_NE(msg.find("aclrtMemcpyAsync: src="), std::string::npos) << msg;
    EXPECT_NE(msg.find("is not mapped"), std::string::npos) << msg;
    EXPECT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);  // reported once
    ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
    EXPECT_EQ(aclrtFreePhysical(m.handle), ACL_SUCCESS);
    EXPECT_EQ(aclrtReleaseMemAddress(m.va), ACL_SUCCESS);
}

// The device's synchronize waits for every stream of the device, with a timeout.
TEST(Stream, SynchronizeDeviceWaitsForEveryStream) {
    ASSERT_NO_FATAL_FAILURE(init_device(0));
    aclrtStream s1 = nullptr, s2 = nullptr;
    ASSERT_EQ(aclrtCreateStream(&s1), ACL_SUCCESS);
    ASSERT_EQ(aclrtCreateStream(&s2), ACL_SUCCESS);
    Gate gate;
    ASSERT_EQ(aclrtLaunchHostFunc(s2, hold_gate, &gate), ACL_SUCCESS);
    EXPECT_EQ(aclrtSynchronizeDeviceWithTimeout(100), ACL_ERROR_RT_WAIT_TIMEOUT);
    EXPECT_EQ(aclrtSynchronizeDeviceWithTimeout(-2), ACL_ERROR_INVALID_PARAM);
    gate.open = true;
    EXPECT_EQ(aclrtSynchronizeDeviceWithTimeout(-1), ACL_SUCCESS);
    EXPECT_EQ(aclrtSynchronizeStreamWithTimeout(s2, 0), ACL_SUCCESS);
    ASSERT_EQ(aclrtDestroyStream(s1), ACL_SUCCESS);
    ASSERT_EQ(aclrtDestroyStream(s2), ACL_SUCCESS);
}

TEST(Stream, SynchronizeWithTimeout) {
    ASSERT_NO_FATAL_FAILURE(init_device(0));
    aclrtStream s = nullptr;
    ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
    Gate gate;
    ASSERT_EQ(aclrtLaunchHostFunc(s, hold_gate, &gate), ACL_SUCCESS);
    auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(aclrtSynchronizeStreamWithTimeout(s, 100), ACL_ERROR_RT_WAIT_TIMEOUT);
    auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
            .count();
    EXPECT_GE(ms, 90);
    EXPECT_LT(ms, 3000);
    EXPECT_EQ(aclrtSynchronizeStreamWithTimeout(s, 0), ACL_ERROR_RT_WAIT_TIMEOUT);
    EXPECT_EQ(aclrtSynchronizeStreamWithTimeout(s, -2), ACL_ERROR_INVALID_PARAM);
    gate.open = true;
    EXPECT_EQ(aclrtSynchronizeStreamWithTimeout(s, -1), ACL_SUCCESS);
    EXPECT_EQ(aclrtSynchronizeStreamWithTimeout(s, 0), ACL_SUCCESS);
    ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
}

void sleep_and_mark(void *arg) {
    usleep(200 * 1000);
    static_cast<std::atomic<bool> *>(arg)->store(true);
}

TEST(Stream, DestroyWaitsAndDeadHandlesAreRefused) {
    ASSERT_NO_FATAL_FAILURE(init_device(0));
    aclrtStream s = nullptr;
    ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
    std::atomic<bool> ran{false};
    ASSERT_EQ(aclrtLaunchHostFunc(s, sleep_and_mark, &ran), ACL_SUCCESS);
    ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
    EXPECT_TRUE(ran.load());  // destroy waited for the task

    char a[8] = {}, b[8] = {};
    testing::internal::CaptureStderr();
    EXPECT_EQ(aclrtMemcpyAsync(a, 8, b, 8, ACL_MEMCPY_HOST_TO_HOST, s),
              ACL_ERROR_RT_STREAM_CONTEXT);
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(err.rfind("acl stand-in: aclrtMemcpyAsync: stream=", 0), 0u) << err;
    EXPECT_NE(err.find("is not a live stream"), std::string::npos) << err;
    EXPECT_EQ(aclrtSynchronizeStream(s), ACL_ERROR_RT_STREAM_CONTEXT);
    EXPECT_EQ(aclrtSynchronizeStreamWithTimeout(s, 10), ACL_ERROR_RT_STREAM_CONTEXT);
    EXPECT_EQ(aclrtLaunchHostFunc(s, sleep_and_mark, &ran), ACL_ERROR_RT_STREAM_CONTEXT);
    EXPECT_EQ(aclrtMemsetAsync(a, 8, 0, 8, s), ACL_ERROR_RT_STREAM_CONTEXT);
    EXPECT_EQ(aclrtDestroyStream(s), ACL_ERROR_RT_STREAM_CONTEXT);
    int bogus = 0;
    EXPECT_EQ(aclrtSynchronizeStream(&bogus), ACL_ERROR_RT_STREAM_CONTEXT);
    EXPECT_EQ(aclrtDestroyStream(nullptr), ACL_ERROR_INVALID_PARAM);
}

TEST(Stream, WorkGoesOnlyToStreamsOfTheCurrentContext) {
    ASSERT_NO_FATAL_FAILURE(init_device(0));
    aclrtStream s = nullptr;
    ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
    ASSERT_EQ(aclrtSetDevice(1), ACL_SUCCESS);
    char a[8] = {}, b[8] = {1};
    EXPECT_EQ(aclrtMemcpyAsync(a, 8, b, 8, ACL_MEMCPY_HOST_TO_HOST, s),
              ACL_ERROR_RT_STREAM_CONTEXT);
    EXPECT_NE(recent().find("belongs to device 0's context"), std::string::npos);
    EXPECT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);  // waiting on it is allowed
    ASSERT_EQ(aclrtResetDevice(1), ACL_SUCCESS);
    ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
    ASSERT_EQ(aclrtMemcpyAsync(a, 8, b, 8, ACL_MEMCPY_HOST_TO_HOST, s), ACL_SUCCESS);
    ASSERT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
    EXPECT_EQ(a[0], 1);
    ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
}

void check_device_in_host_function(void *arg) {
    int32_t dev = -1;
    aclError rc = aclrtGetDevice(&dev);
    static_cast<std::atomic<int> *>(arg)->store(rc == ACL_SUCCESS ? dev : -1);
}

TEST(Stream, NullIsTheDefaultStream) {
    ASSERT_NO_FATAL_FAILURE(init_device(0));
    void *dev = nullptr;
    ASSERT_EQ(aclrtMalloc(&dev, 256, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    std::atomic<int> seen{-2};
    ASSERT_EQ(aclrtMemsetAsync(dev, 256, 7, 256, nullptr), ACL_SUCCESS);
    ASSERT_EQ(aclrtLaunchHostFunc(nullptr, check_device_in_host_function, &seen), ACL_SUCCESS);
    ASSERT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
    EXPECT_EQ(seen.load(), 0);  // host functions run with the stream's context
    char back[256];
    ASSERT_EQ(aclrtMemcpy(back, 256, dev, 256, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    EXPECT_EQ(back[0], 7);
    EXPECT_EQ(back[255], 7);
    ASSERT_EQ(aclrtFree(dev), ACL_SUCCESS);
}

// ---- events ---------------------------------------------------------------------------------

TEST(Event, OrdersTwoStreams) {
    ASSERT_NO_FATAL_FAILURE(init_device(0));
    aclrtStream s1 = nullptr, s2 = nullptr;
    ASSERT_EQ(aclrtCreateStream(&s1), ACL_SUCCESS);
    ASSERT_EQ(aclrtCreateStream(&s2), ACL_SUCCESS);
    aclrtEvent ev = nullptr;
    ASSERT_EQ(aclrtCreateEvent(&ev), ACL_SUCCESS);
    void *dev = nullptr;
    ASSERT_EQ(aclrtMalloc(&dev, 1024, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    std::vector<char> src(1024, 'e'), dst(1024, 0);

    Gate gate;
    ASSERT_EQ(aclrtLaunchHostFunc(s1, hold_gate, &gate), ACL_SUCCESS);
    ASSERT_EQ(aclrtMemcpyAsync(dev, 1024, src.data(), 1024, ACL_MEMCPY_HOST_TO_DEVICE, s1),
              ACL_SUCCESS);
    ASSERT_EQ(aclrtRecordEvent(ev, s1), ACL_SUCCESS);
    ASSERT_EQ(aclrtStreamWaitEvent(s2, ev), ACL_SUCCESS);
    ASSERT_EQ(aclrtMemcpyAsync(dst.data(), 1024, dev, 1024, ACL_MEMCPY_DEVICE_TO_HOST, s2),
              ACL_SUCCESS);
    EXPECT_EQ(aclrtSynchronizeStreamWithTimeout(s2, 100), ACL_ERROR_RT_WAIT_TIMEOUT);
    EXPECT_EQ(dst[0], 0);  // s2 waits for the event s1 has not reached
    gate.open = true;
    ASSERT_EQ(aclrtSynchronizeStream(s2), ACL_SUCCESS);
    EXPECT_EQ(dst, src);
    EXPECT_EQ(aclrtSynchronizeEvent(ev), ACL_SUCCESS);

    // An event never recorded: synchronising and waiting on it return at once.
    aclrtEvent fresh = nullptr;
    ASSERT_EQ(aclrtCreateEvent(&fresh), ACL_SUCCESS);
    EXPECT_EQ(aclrtSynchronizeEvent(fresh), ACL_SUCCESS);
    ASSERT_EQ(aclrtStreamWaitEvent(s2, fresh), ACL_SUCCESS);
    EXPECT_EQ(aclrtSynchronizeStreamWithTimeout(s2, 2000), ACL_SUCCESS);

    // Synchronising on an event waits for the stream to reach its record.
    Gate gate2;
    ASSERT_EQ(aclrtLaunchHostFunc(s1, hold_gate, &gate2), ACL_SUCCESS);
    ASSERT_EQ(aclrtRecordEvent(fresh, s1), ACL_SUCCESS);
    std::thread opener([&gate2] {
        usleep(100 * 1000);
        gate2.open = true;
    });
    auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(aclrtSynchronizeEvent(fresh), ACL_SUCCESS);
    EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(90));
    opener.join();

    ASSERT_EQ(aclrtDestroyEvent(ev), ACL_SUCCESS);
    EXPECT_EQ(aclrtSynchronizeEvent(ev), ACL_ERROR_RT_INVALID_HANDLE);
    EXPECT_EQ(aclrtRecordEvent(ev, s1), ACL_ERROR_RT_INVALID_HANDLE);
    EXPECT_EQ(aclrtDestroyEvent(ev), ACL_ERROR_RT_INVALID_HANDLE);
    ASSERT_EQ(aclrtDestroyEvent(fresh), ACL_SUCCESS);
    ASSERT_EQ(aclrtDestroyStream(s1), ACL_SUCCESS);
    ASSERT_EQ(aclrtDestroyStream(s2), ACL_SUCCESS);
    ASSERT_EQ(aclrtFree(dev), ACL_SUCCESS);
}

// ---- sharing --------------------------------------------------------------------------------

TEST(Share, ImportInTheExportingProcess) {
    ASSERT_NO_FATAL_FAILURE(init_device(0));
    Mapping m;
    ASSERT_EQ(map_new(&m, kG), ACL_SUCCESS);
    const char text[] = "exported bytes";
    ASSERT_EQ(aclrtMemcpy(m.va, kG, text, sizeof text, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
    uint64_t sh = 0;
    EXPECT_EQ(aclrtMemExportToShareableHandle(m.handle, static_cast<aclrtMemHandleType>(2), 0, &sh),
              ACL_ERROR_INVALID_PARAM);
    ASSERT_EQ(aclrtMemExportToShareableHandle(m.handle, ACL_MEM_HANDLE_TYPE_NONE, 0, &sh),
              ACL_SUCCESS);
    EXPECT_EQ(sh >> 32, static_cast<uint64_t>(getpid()));
    int32_t none = 0;
    EXPECT_EQ(aclrtMemSetPidToShareableHandle(sh, &none, 0), ACL_ERROR_INVALID_PARAM);
    int32_t me = getpid();
    EXPECT_EQ(aclrtMemSetPidToShareableHandle(sh + (uint64_t{1} << 32), &me, 1),
              ACL_ERROR_RT_INVALID_HANDLE);

    aclrtDrvMemHandle imported = nullptr;
    ASSERT_EQ(aclrtMemImportFromShareableHandle(sh, 0, &imported), ACL_SUCCESS);
    EXPECT_EQ(aclrtMemExportToShareableHandle(imported, ACL_MEM_HANDLE_TYPE_NONE, 0, &sh),
              ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    void *va2 = nullptr;
    ASSERT_EQ(aclrtReserveMemAddress(&va2, kG, 0, nullptr, 0), ACL_SUCCESS);
    ASSERT_EQ(aclrtMapMem(va2, kG, 0, imported, 0), ACL_SUCCESS);
    char back[sizeof text] = {};
    ASSERT_EQ(aclrtMemcpy(back, sizeof back, va2, sizeof back, ACL_MEMCPY_DEVICE_TO_HOST),
              ACL_SUCCESS);
    EXPECT_STREQ(back, text);
    EXPECT_EQ(aclrtMemImportFromShareableHandle(sh + 1000, 0, &imported),
              ACL_ERROR_RT_INVALID_HANDLE);
    EXPECT_EQ(aclrtMemImportFromShareableHandle(sh, 99, &imported), ACL_ERROR_RT_INVALID_DEVICEID);

    ASSERT_EQ(aclrtUnmapMem(va2), ACL_SUCCESS);
    ASSERT_EQ(aclrtFreePhysical(imported), ACL_SUCCESS);
    ASSERT_EQ(aclrtReleaseMemAddress(va2), ACL_SUCCESS);
    unmap_free(m);
    // Freed: the handle no longer names anything.
    EXPECT_EQ(aclrtMemImportFromShareableHandle(sh, 0, &imported), ACL_ERROR_RT_INVALID_HANDLE);
}

// Exports a filled granule, forks a child that runs `child` with the handle once `allow` has
// been applied, and returns the child's wait status.
int share_with_child(const Mapping &m, uint64_t sh, bool allow_child,
                     const std::function<int(uint64_t)> &child) {
    int go[2];
    if (pipe(go) != 0) return -2;
    fflush(nullptr);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(20);
        close(go[1]);
        uint64_t got = 0;
        if (read(go[0], &got, sizeof got) != static_cast<ssize_t>(sizeof got)) _exit(90);
        int rc = child(got);
        fflush(nullptr);
        _exit(rc);
    }
    close(go[0]);
    int32_t allowed = allow_child ? pid : getpid();
    aclError rc = aclrtMemSetPidToShareableHandle(sh, &allowed, 1);
    ssize_t wrote = write(go[1], &sh, sizeof sh);
    close(go[1]);
    int status = wait_child(pid, 25);
    (void)m;
    return rc == ACL_SUCCESS && wrote == static_cast<ssize_t>(sizeof sh) ? status : -3;
}

TEST(Share, AllowedChildImportsMapsAndSeesTheBytes) {
    ASSERT_NO_FATAL_FAILURE(init_device(0));
    Mapping m;
    ASSERT_EQ(map_new(&m, 2 * kG), ACL_SUCCESS);
    std::vector<char> pattern(4096);
    for (size_t i = 0; i < pattern.size(); ++i) pattern[i] = static_cast<char>(i * 7 + 3);
    char *far = static_cast<char *>(m.va) + kG + 12345;  // in the second granule
    ASSERT_EQ(aclrtMemcpy(far, 4096, pattern.data(), 4096, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
    uint64_t sh = 0;
    ASSERT_EQ(aclrtMemExportToShareableHandle(m.handle, ACL_MEM_HANDLE_TYPE_NONE, 0, &sh),
              ACL_SUCCESS);

    int status = share_with_child(m, sh, true, [&pattern](uint64_t handle) {
        aclrtDrvMemHandle h = nullptr;
        CHILD_CHECK(aclrtMemImportFromShareableHandle(handle, 0, &h) == ACL_SUCCESS);
        void *va = nullptr;
        CHILD_CHECK(aclrtReserveMemAddress(&va, 2 * kG, 0, nullptr, 0) == ACL_SUCCESS);
        CHILD_CHECK(aclrtMapMem(va, 2 * kG, 0, h, 0) == ACL_SUCCESS);
        std::vector<char> back(4096);
        char *at = static_cast<char *>(va) + kG + 12345;
        CHILD_CHECK(aclrtMemcpy(back.data(), 4096, at, 4096, ACL_MEMCPY_DEVICE_TO_HOST) ==
                    ACL_SUCCESS);
        CHILD_CHECK(back == pattern);
        const char reply[] = "child wrote this";
        CHILD_CHECK(aclrtMemcpy(va, kG, reply, sizeof reply, ACL_MEMCPY_HOST_TO_DEVICE) ==
                    ACL_SUCCESS);
        CHILD_CHECK(aclrtUnmapMem(va) == ACL_SUCCESS);
        CHILD_CHECK(aclrtFreePhysical(h) == ACL_SUCCESS);
        return 0;
    });
    ASSERT_TRUE(WIFEXITED(status)) << status;
    EXPECT_EQ(WEXITSTATUS(status), 0);
    char back[32] = {};
    ASSERT_EQ(aclrtMemcpy(back, sizeof back, m.va, sizeof back, ACL_MEMCPY_DEVICE_TO_HOST),
              ACL_SUCCESS);
    EXPECT_STREQ(back, "child wrote this");  // the same physical memory
    unmap_free(m);
}

TEST(Share, ChildNotAllowedIsRefused) {
    ASSERT_NO_FATAL_FAILURE(init_device(0));
    Mapping m;
    ASSERT_EQ(map_new(&m, kG), ACL_SUCCESS);
    uint64_t sh = 0;
    ASSERT_EQ(aclrtMemExportToShareableHandle(m.handle, ACL_MEM_HANDLE_TYPE_NONE, 0, &sh),
              ACL_SUCCESS);
    int status = share_with_child(m, sh, false, [](uint64_t handle) {
        aclrtDrvMemHandle h = nullptr;
        CHILD_CHECK(aclrtMemImportFromShareableHandle(handle, 0, &h) == ACL_ERROR_RT_NO_PERMISSION);
        CHILD_CHECK(recent().find("does not allow pid") != std::string::npos);
        CHILD_CHECK(h == nullptr);
        // An export the parent never made.
        CHILD_CHECK(aclrtMemImportFromShareableHandle(handle + 77, 0, &h) ==
                    ACL_ERROR_RT_INVALID_HANDLE);
        return 0;
    });
    ASSERT_TRUE(WIFEXITED(status)) << status;
    EXPECT_EQ(WEXITSTATUS(status), 0);

    // A process that is gone serves nothing.
    pid_t gone = fork();
    if (gone == 0) _exit(0);
    ASSERT_EQ(wait_child(gone, 10), 0);
    aclrtDrvMemHandle h = nullptr;
    uint64_t dead = (static_cast<uint64_t>(gone) << 32) | 1;
    EXPECT_EQ(aclrtMemImportFromShareableHandle(dead, 0, &h), ACL_ERROR_RT_INVALID_HANDLE);
    EXPECT_NE(recent().find("serves no shareable handles"), std::string::npos);
    unmap_free(m);
}

// An aclrtMalloc block shared by IPC key, as torch_npu's caching allocator hands out memory:
// the block's range is found from an address inside it, a child not allowed is refused, an
// allowed child imports the key, reads the bytes at an offset and writes back; closed keys are
// gone on both sides.
TEST(Ipc, MallocBlockSharedByKey) {
    ASSERT_NO_FATAL_FAILURE(init_device(0));
    constexpr size_t kBlock = 3 * 4096 + 100;
    constexpr size_t kAt = 4096 + 17;  // a tensor inside the block
    void *block = nullptr;
    ASSERT_EQ(aclrtMalloc(&block, kBlock, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    char *tensor = static_cast<char *>(block) + kAt;
    const char text[] = "bytes at an offset";
    ASSERT_EQ(aclrtMemcpy(tensor, sizeof text, text, sizeof text, ACL_MEMCPY_HOST_TO_DEVICE),
              ACL_SUCCESS);

    void *base = nullptr;
    size_t size = 0;
    ASSERT_EQ(aclrtMemGetAddressRange(tensor, &base, &size), ACL_SUCCESS);
    EXPECT_EQ(base, block);
    EXPECT_EQ(size, kBlock);
    int on_stack = 0;
    EXPECT_EQ(aclrtMemGetAddressRange(&on_stack, &base, &size), ACL_ERROR_RT_PARAM_INVALID);
    void *pinned = nullptr;
    ASSERT_EQ(aclrtMallocHost(&pinned, 8192), ACL_SUCCESS);
    ASSERT_EQ(aclrtMemGetAddressRange(static_cast<char *>(pinned) + 5000, &base, &size),
              ACL_SUCCESS);
    EXPECT_EQ(base, pinned);
    EXPECT_EQ(size, 8192u);
    ASSERT_EQ(aclrtFreeHost(pinned), ACL_SUCCESS);

    char key[65] = {};
    EXPECT_EQ(aclrtIpcMemGetExportKey(tensor, 10, key, sizeof key, 0), ACL_ERROR_RT_PARAM_INVALID);
    EXPECT_NE(recent().find("inside such a block"), std::string::npos);
    EXPECT_EQ(aclrtIpcMemGetExportKey(block, kBlock, key, 16, 0), ACL_ERROR_INVALID_PARAM);
    EXPECT_EQ(aclrtIpcMemGetExportKey(block, kBlock + 1, key, sizeof key, 0),
              ACL_ERROR_INVALID_PARAM);
    ASSERT_EQ(aclrtIpcMemGetExportKey(block, kBlock, key, sizeof key, 0), ACL_SUCCESS);
    char again[65] = {};
    ASSERT_EQ(aclrtIpcMemGetExportKey(block, kBlock, again, sizeof again, 0), ACL_SUCCESS);
    EXPECT_STREQ(again, key);
    int32_t none = 0;
    EXPECT_EQ(aclrtIpcMemSetImportPid(key, &none, 1), ACL_ERROR_INVALID_PARAM);
    int32_t me = getpid();
    EXPECT_EQ(aclrtIpcMemSetImportPid("acl-standin-ipc.1.1", &me, 1), ACL_ERROR_RT_INVALID_HANDLE);

    auto run_child = [&key](bool allow, const std::function<int(const char *)> &fn) {
        int go[2];
        if (pipe(go) != 0) return -2;
        fflush(nullptr);
        pid_t pid = fork();
        if (pid == 0) {
            alarm(20);
            close(go[1]);
            char got[65] = {};
            if (read(go[0], got, sizeof got) != static_cast<ssize_t>(sizeof got)) _exit(90);
            int rc = fn(got);
            fflush(nullptr);
            _exit(rc);
        }
        close(go[0]);
        int32_t who = pid;
        aclError rc = allow ? aclrtIpcMemSetImportPid(key, &who, 1) : ACL_SUCCESS;
        ssize_t wrote = write(go[1], key, sizeof key);
        close(go[1]);
        int status = wait_child(pid, 25);
        return rc == ACL_SUCCESS && wrote == static_cast<ssize_t>(sizeof key) ? status : -3;
    };
    int status = run_child(false, [](const char *k) {
        void *va = nullptr;
        CHILD_CHECK(aclrtIpcMemImportByKey(&va, k, 0) == ACL_ERROR_RT_NO_PERMISSION);
        CHILD_CHECK(recent().find("does not allow pid") != std::string::npos);
        return 0;
    });
    ASSERT_TRUE(WIFEXITED(status)) << status;
    EXPECT_EQ(WEXITSTATUS(status), 0);
    status = run_child(true, [&text](const char *k) {
        void *va = nullptr;
        CHILD_CHECK(aclrtIpcMemImportByKey(&va, k, ACL_RT_IPC_MEM_IMPORT_FLAG_ENABLE_PEER_ACCESS) ==
                    ACL_SUCCESS);
        void *again_va = nullptr;
        CHILD_CHECK(aclrtIpcMemImportByKey(&again_va, k, 0) == ACL_ERROR_RT_PARAM_INVALID);
        void *b = nullptr;
        size_t n = 0;
        CHILD_CHECK(aclrtMemGetAddressRange(static_cast<char *>(va) + kAt, &b, &n) == ACL_SUCCESS);
        CHILD_CHECK(b == va && n >= kBlock);
        char back[sizeof text] = {};
        CHILD_CHECK(aclrtMemcpy(back, sizeof back, static_cast<char *>(va) + kAt, sizeof back,
                                ACL_MEMCPY_DEVICE_TO_HOST) == ACL_SUCCESS);
        CHILD_CHECK(memcmp(back, text, sizeof text) == 0);
        const char reply[] = "child wrote this";
        CHILD_CHECK(aclrtMemcpy(va, kBlock, reply, sizeof reply, ACL_MEMCPY_HOST_TO_DEVICE) ==
                    ACL_SUCCESS);
        CHILD_CHECK(aclrtFree(va) == ACL_ERROR_INVALID_PARAM);  // not this process's block
        CHILD_CHECK(aclrtIpcMemClose(k) == ACL_SUCCESS);
        CHILD_CHECK(aclrtMemGetAddressRange(va, &b, &n) == ACL_ERROR_RT_PARAM_INVALID);
        CHILD_CHECK(aclrtIpcMemClose(k) == ACL_ERROR_RT_PARAM_INVALID);
        return 0;
    });
    ASSERT_TRUE(WIFEXITED(status)) << status;
    EXPECT_EQ(WEXITSTATUS(status), 0);
    char back[32] = {};
    ASSERT_EQ(aclrtMemcpy(back, sizeof back, block, sizeof back, ACL_MEMCPY_DEVICE_TO_HOST),
              ACL_SUCCESS);
    EXPECT_STREQ(back, "child wrote this");  // the same memory

    // Closed by the exporter: the key names nothing any more; a new export makes a new key.
    ASSERT_EQ(aclrtIpcMemClose(key), ACL_SUCCESS);
    EXPECT_EQ(aclrtIpcMemSetImportPid(key, &me, 1), ACL_ERROR_RT_INVALID_HANDLE);
    void *va = nullptr;
    EXPECT_EQ(aclrtIpcMemImportByKey(&va, key, 0), ACL_ERROR_RT_INVALID_HANDLE);
    ASSERT_EQ(aclrtIpcMemGetExportKey(block, kBlock, again, sizeof again,
                                      ACL_RT_IPC_MEM_EXPORT_FLAG_DISABLE_PID_VALIDATION),
              ACL_SUCCESS);
    EXPECT_STRNE(again, key);
    // In the exporting process itself, then freed with the block.
    ASSERT_EQ(aclrtIpcMemImportByKey(&va, again, 0), ACL_SUCCESS);
    EXPECT_NE(va, block);
    char mine[sizeof text] = {};
    ASSERT_EQ(aclrtMemcpy(mine, sizeof mine, static_cast<char *>(va) + kAt, sizeof mine,
                          ACL_MEMCPY_DEVICE_TO_HOST),
              ACL_SUCCESS);
    EXPECT_STREQ(mine, text);
    ASSERT_EQ(aclrtIpcMemClose(again), ACL_SUCCESS);
    ASSERT_EQ(aclrtFree(block), ACL_SUCCESS);
    EXPECT_EQ(aclrtIpcMemImportByKey(&va, again, 0), ACL_ERROR_RT_INVALID_HANDLE);
    EXPECT_EQ(aclrtIpcMemClose("not a key"), ACL_ERROR_RT_PARAM_INVALID);
}

// Four processes as the library's PEs use the calls: each exports a granule of its own device,
// allows the others' pids (process 3 instead exports without pid validation), imports and maps
// every other one and checks its bytes; each stays alive until all have imported.
TEST(Share, FourProcessesAllToAll) {
    constexpr int kN = 4;
    struct Entry {
        int32_t pid;
        uint64_t handle;
    };
    int up[kN][2], down[kN][2];
    // Whatever fails, no process is left behind.
    struct Children {
        pid_t pids[kN] = {};
        ~Children() {
            for (pid_t p : pids) {
                if (p > 0) kill(p, SIGKILL), waitpid(p, nullptr, 0);
            }
        }
    } children;
    pid_t *pids = children.pids;
    for (int i = 0; i < kN; ++i) {
        ASSERT_EQ(pipe(up[i]), 0);
        ASSERT_EQ(pipe(down[i]), 0);
        fflush(nullptr);
        pids[i] = fork();
        ASSERT_GE(pids[i], 0);
        if (pids[i] != 0) {
            // Only the child writes up and reads down: its exit is an end of file here.
            close(up[i][1]);
            close(down[i][0]);
            continue;
        }
        alarm(30);
        int to_parent = up[i][1], from_parent = down[i][0];
        auto body = [&]() -> int {
            aclError init = aclInit(nullptr);
            CHILD_CHECK(init == ACL_SUCCESS || init == ACL_ERROR_REPEAT_INITIALIZE);
            CHILD_CHECK(aclrtSetDevice(i) == ACL_SUCCESS);
            Mapping m;
            CHILD_CHECK(map_new(&m, kG, 0, i) == ACL_SUCCESS);
            std::vector<char> mine(kG, static_cast<char>('A' + i));
            CHILD_CHECK(aclrtMemcpy(m.va, kG, mine.data(), kG, ACL_MEMCPY_HOST_TO_DEVICE) ==
                        ACL_SUCCESS);
            Entry me{0, 0};
            CHILD_CHECK(aclrtDeviceGetBareTgid(&me.pid) == ACL_SUCCESS);
            uint64_t flags = i == 3 ? ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION : 0;
            CHILD_CHECK(aclrtMemExportToShareableHandle(m.handle, ACL_MEM_HANDLE_TYPE_NONE, flags,
                                                        &me.handle) == ACL_SUCCESS);
            CHILD_CHECK(write(to_parent, &me, sizeof me) == sizeof me);
            Entry all[kN];
            CHILD_CHECK(read(from_parent, all, sizeof all) == sizeof all);
            if (i != 3) {
                int32_t others[kN - 1];
                int n = 0;
                for (int j = 0; j < kN; ++j) {
                    if (j != i) others[n++] = all[j].pid;
                }
                CHILD_CHECK(aclrtMemSetPidToShareableHandle(me.handle, others, kN - 1) ==
                            ACL_SUCCESS);
            }
            char ready = 'r';
            CHILD_CHECK(write(to_parent, &ready, 1) == 1);
            CHILD_CHECK(read(from_parent, &ready, 1) == 1 && ready == 'g');
            void *peers = nullptr;
            CHILD_CHECK(aclrtReserveMemAddress(&peers, kN * kG, 0, nullptr, 0) == ACL_SUCCESS);
            std::vector<char> back(kG);
            for (int j = 0; j < kN; ++j) {
                if (j == i) continue;
                aclrtDrvMemHandle h = nullptr;
                CHILD_CHECK(aclrtMemImportFromShareableHandle(all[j].handle, i, &h) == ACL_SUCCESS);
                char *at = static_cast<char *>(peers) + j * kG;
                CHILD_CHECK(aclrtMapMem(at, kG, 0, h, 0) == ACL_SUCCESS);
                CHILD_CHECK(aclrtMemcpy(back.data(), kG, at, kG, ACL_MEMCPY_DEVICE_TO_HOST) ==
                            ACL_SUCCESS);
                CHILD_CHECK(back == std::vector<char>(kG, static_cast<char>('A' + j)));
                CHILD_CHECK(aclrtUnmapMem(at) == ACL_SUCCESS);
                CHILD_CHECK(aclrtFreePhysical(h) == ACL_SUCCESS);
            }
            CHILD_CHECK(aclrtReleaseMemAddress(peers) == ACL_SUCCESS);
            char done = 'd';
            CHILD_CHECK(write(to_parent, &done, 1) == 1);
            CHILD_CHECK(read(from_parent, &done, 1) == 1 && done == 'x');  // all imported
            return 0;
        };
        int rc = body();
        fflush(nullptr);
        _exit(rc);
    }
    Entry all[kN];
    for (int i = 0; i < kN; ++i) ASSERT_EQ(read(up[i][0], &all[i], sizeof all[i]), sizeof all[i]);
    for (int i = 0; i < kN; ++i) ASSERT_EQ(write(down[i][1], all, sizeof all), sizeof all);
    for (char step : {'g', 'x'}) {
        for (int i = 0; i < kN; ++i) {
            char c = 0;
            ASSERT_EQ(read(up[i][0], &c, 1), 1) << "process " << i << " before '" << step << "'";
        }
        for (int i = 0; i < kN; ++i) ASSERT_EQ(write(down[i][1], &step, 1), 1);
    }
    for (int i = 0; i < kN; ++i) {
        int status = wait_child(pids[i], 30);
        pids[i] = 0;
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
            << "process " << i << ": " << status;
        close(up[i][0]);
        close(down[i][1]);
    }
}

// ---- strict mode (ACL_STANDIN_STRICT=1) -----------------------------------------------------

TEST(Strict, CopiesWorkAndTheCpuCannotTouchDeviceMemory) {
    if (!strict_mode()) GTEST_SKIP() << "needs ACL_STANDIN_STRICT=1 (ctest acl.standin.strict)";
    ASSERT_NO_FATAL_FAILURE(init_device(0));
    Mapping m;
    ASSERT_EQ(map_new(&m, kG), ACL_SUCCESS);
    const char text[] = "through the alias";
    ASSERT_EQ(aclrtMemcpy(m.va, kG, text, sizeof text, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
    char back[sizeof text] = {};
    ASSERT_EQ(aclrtMemcpy(back, sizeof back, m.va, sizeof back, ACL_MEMCPY_DEVICE_TO_HOST),
              ACL_SUCCESS);
    EXPECT_STREQ(back, text);
    void *blk = nullptr;
    ASSERT_EQ(aclrtMalloc(&blk, 4096, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    ASSERT_EQ(aclrtMemset(blk, 4096, 9, 4096), ACL_SUCCESS);
    ASSERT_EQ(aclrtMemcpy(back, 1, blk, 1, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    EXPECT_EQ(back[0], 9);

    for (void *target : {m.va, blk}) {
        int status = in_child([target] {
            volatile char *p = static_cast<volatile char *>(target);
            return *p == 0x7f ? 3 : 4;  // never reached: the load faults
        });
        ASSERT_TRUE(WIFSIGNALED(status)) << status;
        EXPECT_EQ(WTERMSIG(status), SIGSEGV);
    }
    ASSERT_EQ(aclrtFree(blk), ACL_SUCCESS);
    unmap_free(m);
}

// ---- faults (ACL_STANDIN_FAIL) --------------------------------------------------------------

TEST(Fault, ChosenCallsFailWithTheirNaturalCodes) {
    const char *v = getenv("ACL_STANDIN_FAIL");
    if (!v || strcmp(v, "aclrtMallocPhysical:2,aclrtMemImportFromShareableHandle,aclrtMalloc:1"))
        GTEST_SKIP() << "needs the ACL_STANDIN_FAIL of ctest acl.standin.fault";
    ASSERT_NO_FATAL_FAILURE(init_device(0));
    aclrtPhysicalMemProp prop = prop_for(0);
    aclrtDrvMemHandle h1 = nullptr, h2 = nullptr, h3 = nullptr;
    ASSERT_EQ(aclrtMallocPhysical(&h1, kG, &prop, 0), ACL_SUCCESS);
    testing::internal::CaptureStderr();
    EXPECT_EQ(aclrtMallocPhysical(&h2, kG, &prop, 0), ACL_ERROR_RT_MEMORY_ALLOCATION);
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(err.rfind("acl stand-in: aclrtMallocPhysical: failure injected at call 2", 0), 0u)
        << err;
    EXPECT_EQ(h2, nullptr);
    ASSERT_EQ(aclrtMallocPhysical(&h3, kG, &prop, 0), ACL_SUCCESS);

    void *blk = nullptr;
    EXPECT_EQ(aclrtMalloc(&blk, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_RT_MEMORY_ALLOCATION);
    ASSERT_EQ(aclrtMalloc(&blk, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);

    uint64_t sh = 0;
    ASSERT_EQ(aclrtMemExportToShareableHandle(h1, ACL_MEM_HANDLE_TYPE_NONE, 0, &sh), ACL_SUCCESS);
    aclrtDrvMemHandle imported = nullptr;
    EXPECT_EQ(aclrtMemImportFromShareableHandle(sh, 0, &imported), ACL_ERROR_RT_INVALID_HANDLE);
    EXPECT_NE(recent().find("injected"), std::string::npos);
    ASSERT_EQ(aclrtMemImportFromShareableHandle(sh, 0, &imported), ACL_SUCCESS);

    EXPECT_EQ(aclrtFreePhysical(imported), ACL_SUCCESS);
    EXPECT_EQ(aclrtFreePhysical(h1), ACL_SUCCESS);
    EXPECT_EQ(aclrtFreePhysical(h3), ACL_SUCCESS);
    EXPECT_EQ(aclrtFree(blk), ACL_SUCCESS);
}

// ---- capacity (ACL_STANDIN_HBM_BYTES) -------------------------------------------------------

TEST(Capacity, EachDeviceHasItsOwnLimit) {
    const char *v = getenv("ACL_STANDIN_HBM_BYTES");
    if (!v || strcmp(v, "8M")) GTEST_SKIP() << "needs ACL_STANDIN_HBM_BYTES=8M";
    ASSERT_NO_FATAL_FAILURE(init_device(0));
    aclrtPhysicalMemProp prop = prop_for(0);
    aclrtDrvMemHandle a = nullptr, b = nullptr, c = nullptr;
    ASSERT_EQ(aclrtMallocPhysical(&a, 2 * kG, &prop, 0), ACL_SUCCESS);
    ASSERT_EQ(aclrtMallocPhysical(&b, 2 * kG, &prop, 0), ACL_SUCCESS);
    EXPECT_EQ(aclrtMallocPhysical(&c, kG, &prop, 0), ACL_ERROR_RT_MEMORY_ALLOCATION);
    EXPECT_NE(recent().find("ACL_STANDIN_HBM_BYTES=8388608"), std::string::npos);
    void *blk = nullptr;
    EXPECT_EQ(aclrtMalloc(&blk, 1, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_RT_MEMORY_ALLOCATION);

    // Importing memory another allocation owns costs nothing.
    uint64_t sh = 0;
    ASSERT_EQ(aclrtMemExportToShareableHandle(a, ACL_MEM_HANDLE_TYPE_NONE, 0, &sh), ACL_SUCCESS);
    aclrtDrvMemHandle imported = nullptr;
    ASSERT_EQ(aclrtMemImportFromShareableHandle(sh, 0, &imported), ACL_SUCCESS);
    ASSERT_EQ(aclrtFreePhysical(imported), ACL_SUCCESS);

    // Device 1 has its own 8 MiB.
    ASSERT_EQ(aclrtSetDevice(1), ACL_SUCCESS);
    aclrtPhysicalMemProp prop1 = prop_for(1);
    ASSERT_EQ(aclrtMallocPhysical(&c, 4 * kG, &prop1, 0), ACL_SUCCESS);
    ASSERT_EQ(aclrtFreePhysical(c), ACL_SUCCESS);
    ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);

    // Freeing gives the bytes back.
    ASSERT_EQ(aclrtFreePhysical(b), ACL_SUCCESS);
    ASSERT_EQ(aclrtMallocPhysical(&c, kG, &prop, 0), ACL_SUCCESS);
    ASSERT_EQ(aclrtMalloc(&blk, 4096, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    EXPECT_EQ(aclrtMallocPhysical(&b, kG, &prop, 0), ACL_ERROR_RT_MEMORY_ALLOCATION);
    ASSERT_EQ(aclrtFree(blk), ACL_SUCCESS);
    ASSERT_EQ(aclrtFreePhysical(a), ACL_SUCCESS);
    ASSERT_EQ(aclrtFreePhysical(c), ACL_SUCCESS);
}

}  // namespace

int main(int argc, char **argv) {
    testing::InitGoogleTest(&argc, argv);
    testing::UnitTest::GetInstance()->listeners().Append(new Watchdog);
    return RUN_ALL_TESTS();
}
