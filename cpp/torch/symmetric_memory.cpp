// libshmem_torch.so: the TorchScript classes torch.classes.SymmetricMemory.Manager and
// torch.classes.SymmetricMemory.Ops over libshmem's C ABI, under the names, argument order and
// conventions of CANN SHMEM's torch binding, so a program written for it (load the library
// with torch.ops.load_library, then construct the classes) runs unchanged on this library.
//
// It owns only the translation from tensors to symmetric addresses and the argument checks;
// it never keeps state of its own about the job (libshmem is the one runtime in the process).
// Offsets, sizes and signal values are one-element tensors (any device), counted in elements of
// the data tensor.
//
// Tensors are on the device that holds the symmetric heap (shmemx_heap_device): CPU tensors on
// the host device, `cuda:<index>` tensors when the heap is an NVIDIA GPU's memory (the cuda
// device, SHMEM_DEVICE=cuda), made over the heap's device addresses with the device named, so
// making one needs no CUDA call. Every tensor argument must be on that device. The data
// movement is the library's host calls, blocking as on the host device: on a GPU heap they go
// through the device's copies (complete when the call returns). Their order against torch's
// kernels: each call that moves, signals, waits, synchronizes or frees first waits for torch's
// current stream of the heap's GPU (through c10's device-generic stream interface, so this
// library needs no CUDA headers and builds against a CPU-only torch), so what kernels queued
// there wrote is complete before the host reads it, and what they read before it is
// overwritten; after the call the data is in place for any stream. Work queued on other
// streams is the program's to order (as with torch.distributed's collectives).
#include "settle.h"

#include <aclshmem.h>
#include <shmem.h>
#include <shmemx.h>
#include <torch/custom_class.h>
#include <torch/types.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>
#include <thread>
#include <vector>

namespace shmem_torch {
namespace {

// How long signal_wait_until waits before it fails, unless set_wait_timeout says otherwise:
// torch.distributed's default collective timeout, so a lost peer turns into an error.
constexpr double kDefaultWaitTimeoutS = 600.0;

// The value of the one-element integer tensor `t`, argument `name` of `call`.
int64_t scalar_arg(const char *call, const char *name, const at::Tensor &t) {
    TORCH_CHECK(t.defined(), call, ": ", name, " is an undefined tensor");
    TORCH_CHECK(t.numel() == 1, call, ": ", name, " must hold one element, got ", t.numel());
    TORCH_CHECK(!t.is_floating_point() && !t.is_complex() && t.scalar_type() != at::kBool, call,
                ": ", name, " must be an integer tensor, got ", t.scalar_type());
    return t.item<int64_t>();
}

// The device of the tensors over the symmetric heap: the CPU for host memory, cuda:<index> for
// a GPU's. Fails before start-up and on an NPU heap, which needs torch_npu's tensors.
c10::Device heap_device(const char *call) {
    int index = -1;
    const int kind = shmemx_heap_device(&index);
    TORCH_CHECK(kind >= 0, call, ": shmem is not initialized (call attr_init first)");
    if (kind == SHMEMX_HEAP_CUDA) {
        return c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(index));
    }
    TORCH_CHECK(kind == SHMEMX_HEAP_HOST, call, ": the symmetric heap is on Ascend NPU ", index,
                " (SHMEM_DEVICE=npu); these classes make CPU and CUDA tensors only");
    return c10::Device(c10::DeviceType::CPU);
}

// Where the heap's memory is, for error messages.
const char *heap_place(const c10::Device &dev) {
    return dev.is_cpu() ? "host memory (the host device)" : "GPU memory (SHMEM_DEVICE=cuda)";
}

// A tensor of `sizes` and `options` over `data` on `dev`, not owning it: the device is named, so
// torch asks no driver where the pointer lives.
at::Tensor over(void *data, at::IntArrayRef sizes, const at::TensorOptions &options,
                const c10::Device &dev) {
    return at::for_blob(data, sizes).options(options.device(dev)).target_device(dev).make_tensor();
}

int check_pe(const char *call, int64_t pe, const char *name = "target_pe") {
    const int n_pes = shmem_n_pes();
    TORCH_CHECK(n_pes > 0, call, ": shmem is not initialized (call attr_init first)");
    TORCH_CHECK(pe >= 0 && pe < n_pes, call, ": ", name, " ", pe, " is not a PE of the job [0, ",
                n_pes, ")");
    return static_cast<int>(pe);
}

// A contiguous tensor on the heap's device `dev`.
void check_dense(const char *call, const char *name, const at::Tensor &t, const c10::Device &dev) {
    TORCH_CHECK(t.defined(), call, ": ", name, " is an undefined tensor");
    TORCH_CHECK(t.device() == dev, call, ": ", name, " is on ", t.device(), ", not on ", dev,
                " where the symmetric heap is (", heap_place(dev), ")");
    TORCH_CHECK(t.is_contiguous(), call, ": ", name, " must be contiguous");
}

// The address of `t`'s first element, also when it has none (data_ptr() is null then): a
// tensor of no elements from malloc still has its heap address, which free() returns.
char *first_byte(const at::Tensor &t) {
    if (!t.has_storage()) return nullptr;
    const void *base = t.storage().data();
    if (base == nullptr) return nullptr;
    return const_cast<char *>(static_cast<const char *>(base)) +
           t.storage_offset() * static_cast<int64_t>(t.element_size());
}

bool symmetric(const void *p, size_t bytes) {
    void *first = const_cast<void *>(p);
    void *last = static_cast<char *>(first) + (bytes == 0 ? 0 : bytes - 1);
    const int me = shmem_my_pe();
    return shmem_addr_accessible(first, me) == 1 && shmem_addr_accessible(last, me) == 1;
}

// The address of elements [offset, offset + count) of `t`, checked against its size and,
// with `need_symmetric`, against the symmetric heap.
char *span(const char *call, const char *name, const at::Tensor &t, int64_t offset, int64_t count,
           bool need_symmetric, const c10::Device &dev) {
    check_dense(call, name, t, dev);
    const int64_t numel = t.numel();
    TORCH_CHECK(offset >= 0 && offset <= numel, call, ": ", name, " offset ", offset,
                " is outside its ", numel, " elements");
    TORCH_CHECK(count >= 0 && count <= numel - offset, call, ": ", name, " offset ", offset,
                " + size ", count, " exceeds its ", numel, " elements");
    char *base = first_byte(t);  // null only for a tensor of no elements and no storage
    char *p = base == nullptr ? nullptr : base + offset * static_cast<int64_t>(t.element_size());
    if (need_symmetric) {
        TORCH_CHECK(symmetric(p, static_cast<size_t>(count) * t.element_size()), call, ": ", name,
                    " (", static_cast<const void *>(p),
                    ") is not on the symmetric heap: allocate it with Manager.malloc");
    }
    return p;
}

int32_t *signal_slot(const char *call, const at::Tensor &signal, const at::Tensor &offset,
                     const c10::Device &dev) {
    TORCH_CHECK(signal.defined() && signal.scalar_type() == at::kInt, call,
                ": signal must be an int32 tensor, got ",
                signal.defined() ? c10::toString(signal.scalar_type()) : "undefined");
    const int64_t off = scalar_arg(call, "signal_offset", offset);
    return reinterpret_cast<int32_t *>(span(call, "signal", signal, off, 1, true, dev));
}

int32_t signal_value_arg(const char *call, const char *name, const at::Tensor &t) {
    const int64_t v = scalar_arg(call, name, t);
    TORCH_CHECK(
        v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max(), call,
        ": ", name, " ", v, " does not fit the int32 signal");
    return static_cast<int32_t>(v);
}

int signal_op_arg(const char *call, int64_t op) {
    TORCH_CHECK(op == ACLSHMEM_SIGNAL_SET || op == ACLSHMEM_SIGNAL_ADD, call, ": signal_op ", op,
                " is neither 0 (SET) nor 1 (ADD)");
    return static_cast<int>(op);
}

// The same element size on both sides, so `size` counts the same thing in each.
void check_same_width(const char *call, const at::Tensor &target, const at::Tensor &src) {
    TORCH_CHECK(target.element_size() == src.element_size(), call, ": target has ",
                target.element_size(), "-byte elements but src has ", src.element_size());
}

// ---- collectives: one typed routine per dtype and operation ---------------------------------

enum class Reduce { Sum, Max, Min, Prod };

Reduce reduce_arg(const char *call, const std::string &op) {
    if (op == "sum") return Reduce::Sum;
    if (op == "max") return Reduce::Max;
    if (op == "min") return Reduce::Min;
    if (op == "prod" || op == "product") return Reduce::Prod;
    TORCH_CHECK(false, call, ": op '", op, "' is not one of sum, max, min, prod");
}

template <typename T>
struct Reducer;
#define SHMEM_TORCH_REDUCER(TYPE, NAME)                                                            \
    template <>                                                                                    \
    struct Reducer<TYPE> {                                                                         \
        static int run(Reduce op, TYPE *dest, const TYPE *src, size_t n) {                         \
            switch (op) {                                                                          \
            case Reduce::Sum: return shmem_##NAME##_sum_reduce(SHMEM_TEAM_WORLD, dest, src, n);    \
            case Reduce::Max: return shmem_##NAME##_max_reduce(SHMEM_TEAM_WORLD, dest, src, n);    \
            case Reduce::Min: return shmem_##NAME##_min_reduce(SHMEM_TEAM_WORLD, dest, src, n);    \
            case Reduce::Prod: return shmem_##NAME##_prod_reduce(SHMEM_TEAM_WORLD, dest, src, n);  \
            }                                                                                      \
            return -1;                                                                             \
        }                                                                                          \
    };
SHMEM_TORCH_REDUCER(float, float)
SHMEM_TORCH_REDUCER(double, double)
SHMEM_TORCH_REDUCER(int8_t, int8)
SHMEM_TORCH_REDUCER(int16_t, int16)
SHMEM_TORCH_REDUCER(int32_t, int32)
SHMEM_TORCH_REDUCER(int64_t, int64)
SHMEM_TORCH_REDUCER(uint8_t, uint8)
#undef SHMEM_TORCH_REDUCER

void reduce(const char *call, Reduce op, const at::Tensor &dest, const at::Tensor &src, size_t n) {
    int rc = -1;
    switch (dest.scalar_type()) {
    case at::kFloat:
        rc = Reducer<float>::run(op, dest.data_ptr<float>(), src.data_ptr<float>(), n);
        break;
    case at::kDouble:
        rc = Reducer<double>::run(op, dest.data_ptr<double>(), src.data_ptr<double>(), n);
        break;
    case at::kChar:
        rc = Reducer<int8_t>::run(op, dest.data_ptr<int8_t>(), src.data_ptr<int8_t>(), n);
        break;
    case at::kShort:
        rc = Reducer<int16_t>::run(op, dest.data_ptr<int16_t>(), src.data_ptr<int16_t>(), n);
        break;
    case at::kInt:
        rc = Reducer<int32_t>::run(op, dest.data_ptr<int32_t>(), src.data_ptr<int32_t>(), n);
        break;
    case at::kLong:
        rc = Reducer<int64_t>::run(op, dest.data_ptr<int64_t>(), src.data_ptr<int64_t>(), n);
        break;
    case at::kByte:
        rc = Reducer<uint8_t>::run(op, dest.data_ptr<uint8_t>(), src.data_ptr<uint8_t>(), n);
        break;
    default:
        TORCH_CHECK(false, call, ": dtype ", dest.scalar_type(),
                    " has no reduction here (float32, float64, int8/16/32/64, uint8)");
    }
    TORCH_CHECK(rc == 0, call, ": the reduction failed (", rc, ")");
}

void check_symmetric_tensor(const char *call, const char *name, const at::Tensor &t,
                            const c10::Device &dev) {
    span(call, name, t, 0, t.numel(), true, dev);
}

// Whether the peers can read `src` where it is during a collective into `dest`: a contiguous
// tensor on the symmetric heap (on its device `dev`), outside `dest`.
bool in_place_source(const at::Tensor &src, const at::Tensor &dest, const c10::Device &dev) {
    if (!src.defined() || src.device() != dev || !src.is_contiguous()) return false;
    const char *s = first_byte(src);
    const char *d = first_byte(dest);
    const size_t s_len = src.nbytes(), d_len = dest.nbytes();
    if (s_len > 0 && d_len > 0 && s < d + d_len && d < s + s_len) return false;
    return symmetric(s, s_len);
}

// ---- the classes ----------------------------------------------------------------------------

class Manager : public torch::CustomClassHolder {
public:
    std::string get_name() const { return "Manager"; }

    // Joins the job as PE `my_pe` of `n_ranks` with `local_mem_size` bytes of symmetric heap;
    // PE 0 serves the job's store at `ip_port` (tcp://ip:port). As CANN's binding does, the
    // store runs without TLS (no certificates are passed here); the launcher path (init) keeps
    // TLS. Returns 0 or CANN's error code. Blocks until every PE joined, at most the library's
    // init timeout.
    int64_t attr_init(int64_t my_pe, int64_t n_ranks, int64_t local_mem_size,
                      const std::string &ip_port) {
        static constexpr const char *kCall = "SymmetricMemory.Manager.attr_init";
        TORCH_CHECK(n_ranks > 0 && n_ranks <= std::numeric_limits<int>::max(), kCall,
                    ": world_size ", n_ranks, " must be positive");
        TORCH_CHECK(my_pe >= 0 && my_pe < n_ranks, kCall, ": rank ", my_pe, " is outside [0, ",
                    n_ranks, ")");
        TORCH_CHECK(local_mem_size > 0, kCall, ": mem_size ", local_mem_size, " must be positive");
        TORCH_CHECK(!ip_port.empty() && ip_port.size() < ACLSHMEM_MAX_IP_PORT_LEN, kCall,
                    ": ip_port '", ip_port, "' must be tcp://ip:port, 1 to ",
                    ACLSHMEM_MAX_IP_PORT_LEN - 1, " characters");
        if (aclshmemx_init_status() == ACLSHMEM_STATUS_IS_INITIALIZED) return 0;
        int rc = aclshmemx_set_conf_store_tls(false, nullptr, 0);
        if (rc != 0) return rc;
        aclshmemx_init_attr_t *attr = nullptr;
        rc = aclshmemx_set_attr(static_cast<int>(my_pe), static_cast<int>(n_ranks),
                                static_cast<uint64_t>(local_mem_size), ip_port.c_str(), &attr);
        if (rc != 0) return rc;
        return aclshmemx_init_attr(ACLSHMEMX_INIT_WITH_DEFAULT, attr);
    }

    // Joins the job the way the launcher's environment says (shmemrun, torchrun, mpirun,
    // Slurm), with `local_mem_size` bytes of heap (0: SHMEM_SYMMETRIC_SIZE or its default).
    // shmem_init takes the heap size from SHMEM_SYMMETRIC_SIZE only, so a size given here is
    // written there first (the process's environment keeps it). Returns 0, or non-zero when
    // start-up failed (the library logged why).
    int64_t init(int64_t local_mem_size) {
        static constexpr const char *kCall = "SymmetricMemory.Manager.init";
        TORCH_CHECK(local_mem_size >= 0, kCall, ": mem_size ", local_mem_size,
                    " must not be negative");
        if (aclshmemx_init_status() == ACLSHMEM_STATUS_IS_INITIALIZED) return 0;
        if (local_mem_size > 0) {
            const std::string size = std::to_string(local_mem_size);
            setenv("SHMEM_SYMMETRIC_SIZE", size.c_str(), 1);
        }
        shmem_init();
        return aclshmemx_init_status() == ACLSHMEM_STATUS_IS_INITIALIZED ? 0 : -1;
    }

    int64_t init_status() const { return aclshmemx_init_status(); }
    int64_t my_pe() const { return shmem_my_pe(); }
    int64_t n_pes() const { return shmem_n_pes(); }
    // Leaves the job (collective); on a GPU heap after torch's current stream, so no kernel
    // queued before still reaches the heap when it is unmapped.
    int64_t finalize() {
        if (aclshmemx_init_status() == ACLSHMEM_STATUS_IS_INITIALIZED) {
            settle(heap_device("SymmetricMemory.Manager.finalize"));
            shmem_finalize();
        }
        return 0;
    }

    // A tensor of `shape` and `dtype` on the symmetric heap (collective, as shmem_malloc): a CPU
    // tensor, or a cuda:<index> one when the heap is on a GPU. Its storage is not freed with the
    // tensor: free() it, on every PE, as CANN's binding says.
    at::Tensor malloc(const std::vector<int64_t> &shape, at::ScalarType dtype) {
        return allocate("SymmetricMemory.Manager.malloc", shape, dtype, 0);
    }

    at::Tensor aligned_malloc(const std::vector<int64_t> &shape, at::ScalarType dtype,
                              int64_t alignment) {
        TORCH_CHECK(alignment > 0 && (alignment & (alignment - 1)) == 0,
                    "SymmetricMemory.Manager.aligned_malloc: alignment ", alignment,
                    " is not a positive power of two");
        return allocate("SymmetricMemory.Manager.aligned_malloc", shape, dtype, alignment);
    }

    // Collective: returns the storage of a tensor from malloc to the heap.
    void free(const at::Tensor &tensor) {
        static constexpr const char *kCall = "SymmetricMemory.Manager.free";
        const c10::Device dev = heap_device(kCall);
        check_dense(kCall, "tensor", tensor, dev);
        TORCH_CHECK(tensor.storage_offset() == 0, kCall, ": tensor is a view at element ",
                    tensor.storage_offset(), "; free the tensor malloc returned");
        void *p = first_byte(tensor);
        TORCH_CHECK(p != nullptr && symmetric(p, 1), kCall, ": tensor (", p,
                    ") is not on the symmetric heap");
        settle(dev);  // no kernel queued before still reads or writes it
        shmem_free(p);
    }

    // Whether every element of `tensor` is on the symmetric heap (a contiguous tensor on the
    // heap's device); false before start-up.
    bool on_heap(const at::Tensor &tensor) const {
        int index = -1;
        const int kind = shmemx_heap_device(&index);
        if (kind != SHMEMX_HEAP_HOST && kind != SHMEMX_HEAP_CUDA) return false;
        const c10::Device dev =
            kind == SHMEMX_HEAP_CUDA
                ? c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(index))
                : c10::Device(c10::DeviceType::CPU);
        if (!tensor.defined() || tensor.device() != dev || !tensor.is_contiguous()) return false;
        return symmetric(first_byte(tensor), tensor.nbytes());
    }

    // The same elements of `tensor` as PE `pe` holds them, as a tensor this process may read and
    // write directly (peers on this node): by the CPU on the host device, by kernels on this
    // PE's GPU on the cuda device (the peer's memory as mapped for it); fails when `pe` is not
    // reachable by load and store.
    at::Tensor peer_tensor(const at::Tensor &tensor, int64_t pe) {
        static constexpr const char *kCall = "SymmetricMemory.Manager.peer_tensor";
        const int target = check_pe(kCall, pe, "pe");
        const c10::Device dev = heap_device(kCall);
        char *p = span(kCall, "tensor", tensor, 0, tensor.numel(), true, dev);
        void *peer = shmem_ptr(p, target);
        TORCH_CHECK(peer != nullptr, kCall, ": PE ", pe,
                    " is not mapped in this process (another node)");
        return over(peer, tensor.sizes(), tensor.options(), dev);
    }

private:
    at::Tensor allocate(const char *call, const std::vector<int64_t> &shape, at::ScalarType dtype,
                        int64_t alignment) {
        const c10::Device dev = heap_device(call);
        int64_t count = 1;
        for (int64_t d : shape) {
            TORCH_CHECK(d >= 0, call, ": shape has a negative dimension ", d);
            TORCH_CHECK(d == 0 || count <= std::numeric_limits<int64_t>::max() / d, call,
                        ": shape's element count overflows");
            count *= d;
        }
        const int64_t width = static_cast<int64_t>(c10::elementSize(dtype));
        TORCH_CHECK(count <= std::numeric_limits<int64_t>::max() / width, call,
                    ": shape's byte count overflows");
        // At least one byte, so an empty tensor still has a heap address free() can return.
        const size_t bytes = static_cast<size_t>(std::max<int64_t>(count * width, 1));
        void *p = alignment > 0 ? shmem_align(static_cast<size_t>(alignment), bytes)
                                : shmem_malloc(bytes);
        TORCH_CHECK(p != nullptr, call, ": ", bytes,
                    " bytes do not fit the symmetric heap (raise mem_size or free tensors)");
        return over(p, shape, at::TensorOptions().dtype(dtype), dev);
    }
};

class Ops : public torch::CustomClassHolder {
public:
    std::string get_name() const { return "Ops"; }

    // Copies `size` elements of local `src` from `src_offset` to symmetric `target` at
    // `target_offset` on PE `target_pe`. Returns when `src` may be reused.
    void put_mem(const at::Tensor &target, const at::Tensor &target_offset, const at::Tensor &src,
                 const at::Tensor &src_offset, const at::Tensor &size, int64_t target_pe) {
        static constexpr const char *kCall = "SymmetricMemory.Ops.put_mem";
        const int pe = check_pe(kCall, target_pe);
        const c10::Device dev = heap_device(kCall);
        check_same_width(kCall, target, src);
        const int64_t n = scalar_arg(kCall, "size", size);
        char *dst = span(kCall, "target", target, scalar_arg(kCall, "target_offset", target_offset),
                         n, true, dev);
        char *from =
            span(kCall, "src", src, scalar_arg(kCall, "src_offset", src_offset), n, false, dev);
        settle(dev);
        shmem_putmem(dst, from, static_cast<size_t>(n) * target.element_size(), pe);
    }

    // Copies `size` elements of symmetric `src` at `src_offset` on PE `target_pe` into local
    // `target` at `target_offset`. Returns when the data is in `target`.
    void get_mem(const at::Tensor &target, const at::Tensor &target_offset, const at::Tensor &src,
                 const at::Tensor &src_offset, const at::Tensor &size, int64_t target_pe) {
        static constexpr const char *kCall = "SymmetricMemory.Ops.get_mem";
        const int pe = check_pe(kCall, target_pe);
        const c10::Device dev = heap_device(kCall);
        check_same_width(kCall, target, src);
        const int64_t n = scalar_arg(kCall, "size", size);
        char *dst = span(kCall, "target", target, scalar_arg(kCall, "target_offset", target_offset),
                         n, false, dev);
        char *from =
            span(kCall, "src", src, scalar_arg(kCall, "src_offset", src_offset), n, true, dev);
        settle(dev);
        shmem_getmem(dst, from, static_cast<size_t>(n) * target.element_size(), pe);
    }

    // put_mem, then the int32 `signal` at `signal_offset` on PE `target_pe` is set to (0) or
    // increased by (1) `signal_value`: a PE that sees the signal sees the data.
    void put_mem_signal(const at::Tensor &target, const at::Tensor &target_offset,
                        const at::Tensor &src, const at::Tensor &src_offset, const at::Tensor &size,
                        const at::Tensor &signal, const at::Tensor &signal_offset,
                        const at::Tensor &signal_value, int64_t signal_op, int64_t target_pe) {
        static constexpr const char *kCall = "SymmetricMemory.Ops.put_mem_signal";
        const int pe = check_pe(kCall, target_pe);
        const c10::Device dev = heap_device(kCall);
        const int op = signal_op_arg(kCall, signal_op);
        check_same_width(kCall, target, src);
        const int64_t n = scalar_arg(kCall, "size", size);
        char *dst = span(kCall, "target", target, scalar_arg(kCall, "target_offset", target_offset),
                         n, true, dev);
        char *from =
            span(kCall, "src", src, scalar_arg(kCall, "src_offset", src_offset), n, false, dev);
        int32_t *sig = signal_slot(kCall, signal, signal_offset, dev);
        const int32_t value = signal_value_arg(kCall, "signal_value", signal_value);
        settle(dev);
        aclshmemx_putmem_signal(dst, from, static_cast<size_t>(n) * target.element_size(), sig,
                                value, op, pe);
    }

    // Sets (0) or increases (1) the int32 `signal` at `signal_offset` on PE `target_pe`, after
    // this PE's earlier puts to that PE (a fence orders them).
    void signal_op(const at::Tensor &signal, const at::Tensor &signal_offset,
                   const at::Tensor &signal_value, int64_t signal_op, int64_t target_pe) {
        static constexpr const char *kCall = "SymmetricMemory.Ops.signal_op";
        const int pe = check_pe(kCall, target_pe);
        const int op = signal_op_arg(kCall, signal_op);
        const c10::Device dev = heap_device(kCall);
        int32_t *sig = signal_slot(kCall, signal, signal_offset, dev);
        const int32_t value = signal_value_arg(kCall, "signal_value", signal_value);
        settle(dev);
        shmem_fence();
        if (op == ACLSHMEM_SIGNAL_SET) {
            shmem_int32_atomic_set(sig, value, pe);
        } else {
            shmem_int32_atomic_add(sig, value, pe);
        }
    }

    // Waits until this PE's int32 `signal` at `signal_offset` compares (0 EQ, 1 NE, 2 GT, 3 GE,
    // 4 LT, 5 LE) true against `compare_value`; then the data put with it is visible.
    // `depend_target` orders the wait on a device stream in CANN's binding; here the wait is on
    // the host, after torch's current stream of a GPU heap (header comment), and `depend_target`
    // is only checked. Fails after the wait timeout (600 s unless set_wait_timeout changed it).
    void signal_wait_until(const at::Tensor &depend_target, const at::Tensor &signal,
                           const at::Tensor &signal_offset, const at::Tensor &compare_value,
                           int64_t compare_op) {
        static constexpr const char *kCall = "SymmetricMemory.Ops.signal_wait_until";
        TORCH_CHECK(depend_target.defined(), kCall, ": depend_target is an undefined tensor");
        TORCH_CHECK(compare_op >= ACLSHMEM_CMP_EQ && compare_op <= ACLSHMEM_CMP_LE, kCall,
                    ": compare_op ", compare_op, " is not 0..5 (EQ, NE, GT, GE, LT, LE)");
        const c10::Device dev = heap_device(kCall);
        int32_t *sig = signal_slot(kCall, signal, signal_offset, dev);
        const int32_t value = signal_value_arg(kCall, "compare_value", compare_value);
        const int cmp = static_cast<int>(compare_op);
        settle(dev);
        const auto start = std::chrono::steady_clock::now();
        const auto limit = std::chrono::duration<double>(wait_timeout_s_);
        for (uint64_t round = 0;; round++) {
            int ok = 0;
            aclshmem_int32_test(sig, cmp, value, &ok);
            if (ok == 1) return;
            if (round < 1024) continue;
            const auto waited = std::chrono::steady_clock::now() - start;
            // Read with the library's call: on a GPU heap the CPU must not load it.
            TORCH_CHECK(waited < limit, kCall, ": signal[", signal_offset.item<int64_t>(), "] is ",
                        shmem_int32_atomic_fetch(sig, shmem_my_pe()), " after ", wait_timeout_s_,
                        " s, still not ", kCmpNames[cmp], " ", value);
            if (waited < std::chrono::milliseconds(1)) {
                std::this_thread::yield();
            } else {
                std::this_thread::sleep_for(std::chrono::microseconds(50));
            }
        }
    }

    // How long signal_wait_until waits, in seconds (> 0).
    void set_wait_timeout(double seconds) {
        TORCH_CHECK(seconds > 0, "SymmetricMemory.Ops.set_wait_timeout: seconds ", seconds,
                    " must be positive");
        wait_timeout_s_ = seconds;
    }
    double get_wait_timeout() const { return wait_timeout_s_; }

    // shmem_barrier_all: completes this PE's puts (and torch's current stream of a GPU heap),
    // then waits for every PE.
    void barrier() {
        settle(heap_device("SymmetricMemory.Ops.barrier"));
        shmem_barrier_all();
    }
    // shmem_quiet: completes this PE's puts and signals (and torch's current stream of a GPU
    // heap).
    void quiet() {
        settle(heap_device("SymmetricMemory.Ops.quiet"));
        shmem_quiet();
    }

    // Collective: `dest` (symmetric) gets `src` (symmetric, may be `dest`) of every PE combined
    // elementwise by `op` (sum, max, min, prod).
    void all_reduce(const at::Tensor &dest, const at::Tensor &src, const std::string &op) {
        static constexpr const char *kCall = "SymmetricMemory.Ops.all_reduce";
        const Reduce r = reduce_arg(kCall, op);
        const c10::Device dev = heap_device(kCall);
        check_symmetric_tensor(kCall, "dest", dest, dev);
        check_symmetric_tensor(kCall, "src", src, dev);
        TORCH_CHECK(dest.scalar_type() == src.scalar_type(), kCall, ": dest is ",
                    dest.scalar_type(), " but src is ", src.scalar_type());
        TORCH_CHECK(dest.numel() == src.numel(), kCall, ": dest has ", dest.numel(),
                    " elements but src has ", src.numel());
        if (dest.numel() == 0) return;
        settle(dev);
        reduce(kCall, r, dest, src, static_cast<size_t>(dest.numel()));
    }

    // Collective: block i of symmetric `dest` (world_size blocks of src's size) gets `src` of
    // PE i. Returns false, doing nothing, when `src` cannot be read by the peers where it is (not
    // contiguous, not on the symmetric heap, or inside `dest`): the caller then moves the data
    // another way. Every PE must pass alike tensors, so that all take the same branch.
    bool all_gather(const at::Tensor &dest, const at::Tensor &src) {
        static constexpr const char *kCall = "SymmetricMemory.Ops.all_gather";
        const c10::Device dev = heap_device(kCall);
        check_symmetric_tensor(kCall, "dest", dest, dev);
        if (!in_place_source(src, dest, dev)) return false;
        check_same_width(kCall, dest, src);
        TORCH_CHECK(dest.numel() == src.numel() * shmem_n_pes(), kCall, ": dest has ", dest.numel(),
                    " elements, not world_size ", shmem_n_pes(), " x src's ", src.numel());
        settle(dev);
        const int rc = shmem_fcollectmem(SHMEM_TEAM_WORLD, dest.data_ptr(), src.data_ptr(),
                                         src.numel() * src.element_size());
        TORCH_CHECK(rc == 0, kCall, ": fcollect failed (", rc, ")");
        return true;
    }

    // Collective: block j of `src` (world_size equal blocks) lands as block i of symmetric
    // `dest` on PE j, i being this PE. Returns false, doing nothing, as all_gather does.
    bool all_to_all(const at::Tensor &dest, const at::Tensor &src) {
        static constexpr const char *kCall = "SymmetricMemory.Ops.all_to_all";
        const c10::Device dev = heap_device(kCall);
        check_symmetric_tensor(kCall, "dest", dest, dev);
        if (!in_place_source(src, dest, dev)) return false;
        check_same_width(kCall, dest, src);
        const int64_t n = shmem_n_pes();
        TORCH_CHECK(dest.numel() == src.numel() && src.numel() % n == 0, kCall, ": dest has ",
                    dest.numel(), " elements and src ", src.numel(),
                    "; both need the same count, a multiple of world_size ", n);
        settle(dev);
        const int rc = shmem_alltoallmem(SHMEM_TEAM_WORLD, dest.data_ptr(), src.data_ptr(),
                                         (src.numel() / n) * src.element_size());
        TORCH_CHECK(rc == 0, kCall, ": alltoall failed (", rc, ")");
        return true;
    }

private:
    static constexpr const char *kCmpNames[] = {"EQ", "NE", "GT", "GE", "LT", "LE"};
    double wait_timeout_s_ = kDefaultWaitTimeoutS;
};

}  // namespace
}  // namespace shmem_torch

// The names CANN's binding registers, plus this library's additions (init, my_pe, n_pes,
// peer_tensor, barrier, quiet, the collectives, the wait timeout).
static auto g_manager = torch::class_<shmem_torch::Manager>("SymmetricMemory", "Manager")
                            .def(torch::init<>())
                            .def("get_name", &shmem_torch::Manager::get_name)
                            .def("attr_init", &shmem_torch::Manager::attr_init)
                            .def("init", &shmem_torch::Manager::init)
                            .def("init_status", &shmem_torch::Manager::init_status)
                            .def("my_pe", &shmem_torch::Manager::my_pe)
                            .def("n_pes", &shmem_torch::Manager::n_pes)
                            .def("finalize", &shmem_torch::Manager::finalize)
                            .def("malloc", &shmem_torch::Manager::malloc)
                            .def("aligned_malloc", &shmem_torch::Manager::aligned_malloc)
                            .def("free", &shmem_torch::Manager::free)
                            .def("peer_tensor", &shmem_torch::Manager::peer_tensor)
                            .def("on_heap", &shmem_torch::Manager::on_heap);

static auto g_ops = torch::class_<shmem_torch::Ops>("SymmetricMemory", "Ops")
                        .def(torch::init<>())
                        .def("get_name", &shmem_torch::Ops::get_name)
                        .def("put_mem", &shmem_torch::Ops::put_mem)
                        .def("get_mem", &shmem_torch::Ops::get_mem)
                        .def("put_mem_signal", &shmem_torch::Ops::put_mem_signal)
                        .def("signal_op", &shmem_torch::Ops::signal_op)
                        .def("signal_wait_until", &shmem_torch::Ops::signal_wait_until)
                        .def("set_wait_timeout", &shmem_torch::Ops::set_wait_timeout)
                        .def("get_wait_timeout", &shmem_torch::Ops::get_wait_timeout)
                        .def("barrier", &shmem_torch::Ops::barrier)
                        .def("quiet", &shmem_torch::Ops::quiet)
                        .def("all_reduce", &shmem_torch::Ops::all_reduce)
                        .def("all_gather", &shmem_torch::Ops::all_gather)
                        .def("all_to_all", &shmem_torch::Ops::all_to_all);
