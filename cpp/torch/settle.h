// settle(): ordering with torch's current stream of a GPU, shared by the PyTorch classes
// (symmetric_memory.cpp) and the torch.distributed backend (process_group.cpp). Through c10's
// device-generic stream interface, so neither needs CUDA headers or a CUDA build of torch.
#ifndef SHMEM_TORCH_SETTLE_H
#define SHMEM_TORCH_SETTLE_H

#include <c10/core/Device.h>
#include <c10/core/impl/VirtualGuardImpl.h>

namespace shmem_torch {

// Waits for the work torch queued on its current stream of `dev` when that is a GPU, so what
// kernels queued before wrote is there for the host to read, and nothing they queued before
// still reads what the host writes next. Nothing to wait for when torch has no CUDA or sees no
// GPU of that index: then it ran no kernel there.
inline void settle(const c10::Device &dev) {
    if (!dev.is_cuda() || !c10::impl::hasDeviceGuardImpl(c10::DeviceType::CUDA)) return;
    const c10::impl::VirtualGuardImpl cuda(c10::DeviceType::CUDA);
    if (dev.index() >= cuda.deviceCount()) return;
    cuda.getStream(dev).synchronize();
}

}  // namespace shmem_torch

#endif
