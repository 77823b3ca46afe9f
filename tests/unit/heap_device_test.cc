// heap_device_test.cc: shmemx_heap_device, where bindings learn which device holds the heap (a
// torch tensor over it must name that device). Runs with the device the job was given: host
// here, npu and cuda in the test's device twins (npu.unit.heap_device.*, cuda.unit.heap_device.*,
// over the stand-ins), so each kind is checked against SHMEM_DEVICE.
#include <gtest/gtest.h>
#include <shmem.h>
#include <shmemx.h>

#include <cstdlib>
#include <string>

#include "test_util.h"

using namespace testutil;

TEST(HeapDeviceTest, KindAndIndex_FollowTheDeviceTheJobWasGiven_Test) {
    const char *env = std::getenv("SHMEM_DEVICE");
    const std::string asked = env == nullptr ? "" : env;
    int index = -7;
    const int kind = shmemx_heap_device(&index);
    if (asked == "cuda") {
        EXPECT_EQ(kind, SHMEMX_HEAP_CUDA);
        EXPECT_GE(index, 0) << "the GPU's ordinal";
    } else if (asked == "npu") {
        EXPECT_EQ(kind, SHMEMX_HEAP_NPU);
        EXPECT_GE(index, 0) << "the NPU's ordinal";
    } else if (asked == "host") {
        EXPECT_EQ(kind, SHMEMX_HEAP_HOST);
        EXPECT_EQ(index, -1);
    } else {  // auto (or unset): the npu where ACL loads, else host memory
        EXPECT_TRUE(kind == SHMEMX_HEAP_HOST || kind == SHMEMX_HEAP_NPU) << kind;
        EXPECT_EQ(index < 0, kind == SHMEMX_HEAP_HOST) << index;
    }
    // The device pointer is optional.
    EXPECT_EQ(shmemx_heap_device(nullptr), kind);
    shmem_barrier_all();
}

TEST(HeapDeviceTest, TheHeapIsWhereTheKindSays_Test) {
    // On the host device the CPU loads and stores the heap; on an accelerator shmem_ptr of this
    // PE's own heap address is that address (the device address kernels use), never a host
    // mapping of it.
    int *p = static_cast<int *>(shmem_malloc(sizeof(int)));
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(shmem_ptr(p, me()), p);
    if (shmemx_heap_device(nullptr) == SHMEMX_HEAP_HOST) {
        *p = 42 + me();
        EXPECT_EQ(*p, 42 + me());
    }
    shmem_barrier_all();
    shmem_free(p);
}
