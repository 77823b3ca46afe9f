// shmem_torch._c10d: the torch.distributed backend "shmem", a c10d::Backend over libshmem's C
// ABI, and its Python binding (`import shmem_torch` registers it with
// torch.distributed.Backend.register_backend; python/shmem_torch/distributed.py).
//
// Start-up (ShmemBackend's constructor): the process's one SHMEM job when the program already
// started the library (its PEs must be torch's ranks); else the launcher's way under shmemrun;
// else the CANN way from torch's own rendezvous: rank 0 makes a unique id and hands it to the
// others through the store torch gives the backend. A job this backend started finalizes at exit
// (a CANN-way job by itself, shmemrun's through an atexit handler), so a program that never calls
// destroy_process_group exits 0.
//
// Collectives run on ordinary CPU tensors, staged through symmetric scratch the backend owns: a
// fixed area for the sizes some collectives exchange first, and a data area that grows (a
// collective shmem_malloc, at the same point of the same collective on every rank) to the
// largest collective seen; and a staging area for the exchanges (all_to_all, all_to_all_single,
// gather, scatter), two halves used in turn so that each exchange is puts into the receivers'
// half and one barrier. An exchange whose sizes every rank knows alike (equal splits, gather's
// and scatter's tensors, each checked against this rank's shapes) skips the size exchange;
// uneven splits send the sizes round first (one fcollect) and check every pair. They run to
// completion on the calling thread over the library's team collectives (the group's team) and
// puts, and return a Work whose future is already complete. all_reduce and reduce go through the
// data area in pieces of kReduceChunk bytes where every rank has a CPU of its own: each piece is
// copied in, reduced in place by the library's team reduction and copied out before the next, so
// every member's piece stays in the last-level cache (a pass over a whole large tensor per step
// runs at memory speed instead); where ranks share CPUs, the two barriers per piece would cost
// more than that saves, and the tensor goes through whole. An all_reduce of kMappedMin bytes or
// more, where every rank has a CPU of its own and maps the others' memory (one node), stages
// less (mapped_reduce_all): each rank copies in only the slices its peers reduce, reduces its
// own slice from its tensor and their staging read in place, and copies out only their slices.
// Between ranks of one node, large collectives skip the staging: the direct path (DirectPath)
// reads the peers' tensors straight into this rank's with cross-memory attach, one copy per
// byte: all_gather_into_tensor, all_gather, all_to_all_single, all_to_all, and all_reduce and
// reduce_scatter as a reduce-scatter of slices read piece by piece and combined here, and
// (all_reduce) each combined piece written into every peer's tensor (cross-memory attach's
// write) while it is still in the caches.
// Reductions run in the tensor's dtype where the library has it (float32/64, int8..64, uint8),
// bool as uint8 (SUM is OR, PRODUCT AND, as torch's CPU backends), float16/bfloat16 in float32,
// complex (SUM, AVG) as pairs of reals. PREMUL_SUM multiplies this rank's tensor by the factor
// torch gives (a number, or a one-element tensor) before a SUM.
//
// With the heap in GPU memory (SHMEM_DEVICE=cuda) the backend takes cuda tensors on the heap's
// GPU as well as CPU tensors, and the CPU never loads or stores the scratch: every byte moves
// with copy() (after torch's current stream of that GPU, through the library's synchronous
// driver copies; between two places off the heap through the arena's bounce area), the
// library's collectives and reductions work on the scratch, and the direct and mapped paths,
// which load and store with the CPU, are off.
//
// Point to point goes through the heap: every rank has a mailbox per sender (a header and up to
// kMailChunk bytes of a message) and a signal per sender counting the chunks put there; every
// sender has an acknowledgement per receiver counting the chunks taken out. A chunk is put (with
// the signal, after its header) once the receiver has taken the one before, so a message of any
// size goes through its one mailbox in turn. A send runs on a thread of its own, after the sends
// to the same rank posted before it; a recv runs on a thread of its own, reads every chunk that
// has come from its sender and takes the first whole message of its tag (a message of another
// tag waits for the recv that wants it), recvs of one sender and tag in the order posted. Both
// give up with an error after the group's timeout.
//
// Timeouts: a collective runs inside the library's calls, which wait for a rank that is only late
// as long as it takes (they end the job themselves when a rank died, or when the ranks missing
// have all waited in other library calls for the job's control timeout) and cannot be
// interrupted. So each group has a watchdog thread (Watchdog) that looks at the collective in
// progress every 100 ms: one that has waited longer than the group's timeout (torch's
// `timeout=`) is named on stderr with the timeout, and the job ends with status 1
// (shmem_global_exit), as NCCL's watchdog ends the process; no rank is left waiting.
//
// Groups: the group of all ranks (torch's default group, or new_group of every rank in rank
// order) runs on SHMEM_TEAM_WORLD with the scratch above. A group of some ranks (new_group,
// split_group, a DeviceMesh dimension) exists on its members only, as torch creates it: its
// team is made by its members alone (shmemx_team_create) from its global ranks in group-rank
// order, any set in any order (team PE i is global rank ranks[i], the group's rank i). Its
// symmetric scratch cannot grow (shmem_malloc is collective over every PE):
// it is a fixed region of an arena the first group of all ranks allocates, the region of the
// group's team slot (GroupArena), so two live groups that share a rank never share a region;
// collectives larger than the region go through it in chunks. Every rank of a group is a PE:
// puts, signals and atomics name members_[group rank].
#include "settle.h"

#include <aclshmem.h>
#include <shmem.h>
#include <shmemx.h>

#include <pybind11/chrono.h>
#include <pybind11/stl.h>
#include <torch/python.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace shmem_torch {
namespace {

using c10d::OpType;
using c10d::ReduceOp;
using c10d::Work;
using WorkPtr = c10::intrusive_ptr<Work>;

constexpr const char *kName = "shmem";

// A Work that is done when made: the collectives here complete on the calling thread. Its
// future holds the output tensors (DDP's reducer reads them through get_future()).
class DoneWork : public Work {
public:
    DoneWork(int rank, OpType type, std::vector<at::Tensor> outputs)
        : Work(rank, type),
          future_(c10::make_intrusive<c10::ivalue::Future>(
              c10::ListType::create(c10::TensorType::get()))) {
        future_->markCompleted(c10::IValue(std::move(outputs)));
    }
    bool isCompleted() override { return true; }
    bool isSuccess() const override { return true; }
    bool wait(std::chrono::milliseconds /*timeout*/) override { return true; }
    c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

private:
    c10::intrusive_ptr<c10::ivalue::Future> future_;
};

// A send or recv: the thread that moves the message completes the future (or sets its error).
class ThreadWork : public Work {
public:
    ThreadWork(int rank, OpType type, at::Tensor tensor)
        : Work(rank, type),
          tensor_(std::move(tensor)),
          future_(c10::make_intrusive<c10::ivalue::Future>(
              c10::ListType::create(c10::TensorType::get()))) {}
    ~ThreadWork() override {
        if (thread_.joinable()) thread_.join();
    }
    void start(std::function<int()> body) {
        thread_ = std::thread([this, body = std::move(body)] {
            try {
                source_ = body();
                future_->markCompleted(c10::IValue(std::vector<at::Tensor>{tensor_}));
            } catch (...) {
                future_->setError(std::current_exception());
            }
        });
    }
    bool isCompleted() override { return future_->completed(); }
    bool isSuccess() const override { return future_->completed() && !future_->hasError(); }
    bool wait(std::chrono::milliseconds /*timeout*/) override {
        future_->wait();
        if (future_->hasError()) std::rethrow_exception(future_->exception_ptr());
        return true;
    }
    int sourceRank() const override { return source_; }
    c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

private:
    at::Tensor tensor_;
    c10::intrusive_ptr<c10::ivalue::Future> future_;
    std::atomic<int> source_{-1};
    std::thread thread_;
};

// Ends the job when a collective of the group outlasts its timeout (see the top). arm() and
// disarm() bracket each collective, on the calling thread; the thread that watches starts with
// the first collective and stops with the group.
class Watchdog {
public:
    explicit Watchdog(int rank) : rank_(rank) {}
    ~Watchdog() {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stop_ = true;
        }
        cv_.notify_all();
        if (thread_.joinable()) thread_.join();
    }
    void arm(const char *call, std::chrono::milliseconds timeout) {
        std::lock_guard<std::mutex> lock(mutex_);
        call_ = call;
        timeout_ = timeout;
        since_ = std::chrono::steady_clock::now();
        if (!thread_.joinable()) thread_ = std::thread([this] { watch(); });
    }
    void disarm() {
        std::lock_guard<std::mutex> lock(mutex_);
        call_ = nullptr;
    }

private:
    void watch() {
        std::unique_lock<std::mutex> lock(mutex_);
        while (!stop_) {
            cv_.wait_for(lock, std::chrono::milliseconds(100));
            if (stop_ || call_ == nullptr) continue;
            const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(
                std::chrono::steady_clock::now() - since_);
            if (waited <= timeout_) continue;
            std::fprintf(stderr,
                         "shmem backend: rank %d: %s did not complete within the group's timeout "
                         "of %lld ms (waited %lld ms): a rank has not entered it; ending the job\n",
                         rank_, call_, static_cast<long long>(timeout_.count()),
                         static_cast<long long>(waited.count()));
            std::fflush(stderr);
            shmem_global_exit(1);
        }
    }

    const int rank_;
    std::mutex mutex_;
    std::condition_variable cv_;
    const char *call_ = nullptr;
    std::chrono::milliseconds timeout_{0};
    std::chrono::steady_clock::time_point since_;
    bool stop_ = false;
    std::thread thread_;
};

// A size in bytes from environment variable `name` (a number with an optional K/M/G/T suffix,
// powers of 1024), else `fallback`.
uint64_t bytes_from_env(const char *name, uint64_t fallback) {
    const char *env = std::getenv(name);
    if (env == nullptr || *env == '\0') return fallback;
    char *end = nullptr;
    const double value = std::strtod(env, &end);
    double scale = 1;
    if (end != nullptr && *end != '\0') {
        switch (*end) {
        case 'k':
        case 'K': scale = 1024.0; break;
        case 'm':
        case 'M': scale = 1024.0 * 1024; break;
        case 'g':
        case 'G': scale = 1024.0 * 1024 * 1024; break;
        case 't':
        case 'T': scale = 1024.0 * 1024 * 1024 * 1024; break;
        default: scale = 0;
        }
        if (scale != 0 && end[1] != '\0' && !((end[1] == 'b' || end[1] == 'B') && end[2] == '\0'))
            scale = 0;
    }
    TORCH_CHECK(value > 0 && scale > 0, "shmem backend: ", name, "='", env,
                "' is not a size in bytes (e.g. 1073741824, 512M, 2G)");
    return static_cast<uint64_t>(value * scale);
}

// Bytes of heap for a job this backend starts: SHMEM_SYMMETRIC_SIZE, else 1 GiB.
uint64_t heap_bytes() { return bytes_from_env("SHMEM_SYMMETRIC_SIZE", uint64_t{1} << 30); }

// The symmetric scratch of the groups of some ranks: one region per team slot (a team's slot is
// the same on its members and differs between live teams sharing a PE, so a region is used by
// one live group on each PE), SHMEM_TORCH_GROUP_SCRATCH bytes each (default 512 KiB). Allocated
// by the first backend of a group of all ranks (collective over every PE, as its constructor
// is), freed when the last such backend shuts down: the same sequence on every rank.
struct GroupArena {
    static constexpr int kFirstSlot = 2;  // slots 0 and 1 are the predefined teams'
    static constexpr int kSlots = 64;
    static constexpr size_t kBounce = size_t{1} << 20;
    std::mutex mutex;
    std::mutex bounce_mutex;  // bounce's
    char *bounce = nullptr;
    char *base = nullptr;
    size_t region = 0;
    int users = 0;

    // `device`: the heap is in GPU memory, and the bounce area comes with the arena.
    void acquire(bool device) {
        std::lock_guard<std::mutex> lock(mutex);
        if (users++ > 0) return;
        region = (bytes_from_env("SHMEM_TORCH_GROUP_SCRATCH", 512 << 10) + 4095) & ~size_t{4095};
        // A heap without room leaves the group of all ranks working as before: only groups of
        // some ranks are refused then (region_of), naming the sizes.
        base = static_cast<char *>(shmem_malloc(region * (kSlots - kFirstSlot)));
        if (device) bounce = static_cast<char *>(shmem_malloc(kBounce));
    }
    // With the heap in GPU memory: `n` bytes from `src` to `dst`, neither on the heap (a CUDA
    // tensor's memory or host memory), through this process's bounce area on the heap, since
    // the library copies only to and from the heap.
    void bounce_copy(void *dst, const void *src, size_t n) {
        std::lock_guard<std::mutex> lock(bounce_mutex);
        TORCH_CHECK(bounce != nullptr, "shmem backend: the symmetric heap had no room for the ",
                    kBounce, " bytes of the GPU heap's bounce area (raise SHMEM_SYMMETRIC_SIZE)");
        const int me = shmem_my_pe();
        for (size_t at = 0; at < n; at += kBounce) {
            const size_t len = std::min(kBounce, n - at);
            shmem_putmem(bounce, static_cast<const char *>(src) + at, len, me);
            shmem_getmem(static_cast<char *>(dst) + at, bounce, len, me);
        }
    }
    // The last group of all ranks going: the retired groups' teams end (see retire), then the
    // arena goes back to the heap.
    void release() {
        std::lock_guard<std::mutex> lock(mutex);
        if (users == 0 || --users > 0) return;
        std::sort(retired.begin(), retired.end(),
                  [](const Retired &a, const Retired &b) { return a.key < b.key; });
        for (const Retired &r : retired) shmem_team_destroy(r.team);
        retired.clear();
        if (base != nullptr) shmem_free(base);
        base = nullptr;
        std::lock_guard<std::mutex> hold(bounce_mutex);
        if (bounce != nullptr) shmem_free(bounce);
        bounce = nullptr;
    }
    // A group of some ranks that torch has shut down: its team ends when the last group of all
    // ranks does, since shmem_team_destroy is collective over the members and torch shuts
    // groups down in an order of their names, which differ between ranks for the same group
    // (split_group's, DeviceMesh's): destroying at once could wait on a member that shuts
    // another group down first. The last group of all ranks shuts down after every other on
    // every rank (the default group's name is the least), and there every rank ends its
    // retired teams sorted by a key every member gives the same team (its ranks, and how many
    // groups of those ranks this process made before), so ranks sharing two teams end them in
    // the same order.
    void retire(std::vector<int> ranks, uint64_t count, shmem_team_t team) {
        std::lock_guard<std::mutex> lock(mutex);
        retired.push_back({{std::move(ranks), count}, team});
    }
    // How many groups of `ranks` this process has made (their keys' second part).
    uint64_t count_of(const std::vector<int> &ranks) {
        std::lock_guard<std::mutex> lock(mutex);
        return made[ranks]++;
    }
    struct Retired {
        std::pair<std::vector<int>, uint64_t> key;
        shmem_team_t team;
    };
    std::vector<Retired> retired;
    std::map<std::vector<int>, uint64_t> made;
    // The region of team slot `slot`, or nullptr when no group of all ranks holds the arena or
    // the heap had no room for it.
    char *region_of(int slot) {
        std::lock_guard<std::mutex> lock(mutex);
        if (base == nullptr || slot < kFirstSlot || slot >= kSlots) return nullptr;
        return base + static_cast<size_t>(slot - kFirstSlot) * region;
    }
};

GroupArena &group_arena() {
    static GroupArena arena;
    return arena;
}

std::string ranks_text(const std::vector<int> &ranks) {
    std::string text = "[";
    for (size_t i = 0; i < ranks.size(); ++i) {
        if (i > 0) text += ", ";
        text += std::to_string(ranks[i]);
    }
    return text + "]";
}

// `t`'s elements (as `work`: the dtype the library reduces, complex as pairs of reals)
// multiplied by PREMUL_SUM's factor; a copy when `work` is `t`'s own memory.
at::Tensor premultiplied(const char *call, at::Tensor work, const at::Tensor &t,
                         const ReduceOp &op) {
    const auto *factor = dynamic_cast<const c10d::PreMulSumSupplement *>(op.supplement_.get());
    TORCH_CHECK(factor != nullptr, "shmem backend: ", call, ": ReduceOp.PREMUL_SUM without a ",
                "factor (make it with torch.distributed._make_nccl_premul_sum(factor))");
    if (work.data_ptr() == t.data_ptr()) work = work.clone();
    if (factor->tensor_factor.defined()) {
        const at::Tensor &f = factor->tensor_factor;
        TORCH_CHECK(f.numel() == 1 && !at::isComplexType(f.scalar_type()), "shmem backend: ", call,
                    ": PREMUL_SUM's factor must be a real number or a one-element real ",
                    "tensor, got ", f.numel(), " elements of ", f.scalar_type());
        work.mul_(f.to(at::kCPU, work.scalar_type()).reshape({}));
    } else {
        work.mul_(factor->double_factor);
    }
    return work;
}

// Joins the process's SHMEM job (see the top of this file). Returns whether this call started
// it (a job started here finalizes at exit).
bool join_job(const c10::intrusive_ptr<c10d::Store> &store, int rank, int size) {
    if (aclshmemx_init_status() == ACLSHMEM_STATUS_IS_INITIALIZED) return false;
    if (std::getenv("SHMEM_RUN_RANK") != nullptr) {
        shmem_init();
        TORCH_CHECK(aclshmemx_init_status() == ACLSHMEM_STATUS_IS_INITIALIZED,
                    "shmem backend: shmem_init failed under shmemrun");
        // shmemrun counts a PE that leaves without shmem_finalize as failed: the job this
        // backend started ends with the process, as a CANN-way job does by itself.
        std::atexit([] {
            if (aclshmemx_init_status() == ACLSHMEM_STATUS_IS_INITIALIZED) shmem_finalize();
        });
        return true;
    }
    aclshmemx_uniqueid_t uid;
    static_assert(sizeof(uid) == 136, "aclshmemx_uniqueid_t is 136 bytes");
    const std::string key = "shmem_backend/uniqueid";
    if (rank == 0) {
        const int rc = aclshmemx_get_uniqueid(&uid);
        TORCH_CHECK(rc == 0, "shmem backend: aclshmemx_get_uniqueid failed (", rc,
                    "): see SHMEM_UID_SOCK_IFNAME / SHMEM_UID_SESSION_ID in docs/environment.md");
        const auto *bytes = reinterpret_cast<const uint8_t *>(&uid);
        store->set(key, std::vector<uint8_t>(bytes, bytes + sizeof(uid)));
    } else {
        const std::vector<uint8_t> bytes = store->get(key);
        TORCH_CHECK(bytes.size() == sizeof(uid),
                    "shmem backend: the unique id in torch's store has ", bytes.size(),
                    " bytes, not ", sizeof(uid));
        std::memcpy(&uid, bytes.data(), sizeof(uid));
    }
    const uint64_t heap = heap_bytes();
    aclshmemx_init_attr_t *attr = nullptr;
    TORCH_CHECK(aclshmemx_set_attr(rank, size, heap, nullptr, &attr) == 0 &&
                    aclshmemx_set_attr_uniqueid_args(rank, size, static_cast<int64_t>(heap), &uid,
                                                     attr) == 0,
                "shmem backend: bad start-up attributes (rank ", rank, ", size ", size, ", heap ",
                heap, " bytes)");
    const int rc = aclshmemx_init_attr(ACLSHMEMX_INIT_WITH_UNIQUEID, attr);
    TORCH_CHECK(rc == 0 && aclshmemx_init_status() == ACLSHMEM_STATUS_IS_INITIALIZED,
                "shmem backend: starting the job from torch's rendezvous failed (",
                "aclshmemx_init_attr returned ", rc, ")");
    return true;
}

// The library's reduction for `op` on elements of `dtype` (already mapped to a type the library
// has) over team `w`: dest[i] = op over its PEs of src[i], in place allowed.
int reduce_call(shmem_team_t w, at::ScalarType dtype, ReduceOp::RedOpType op, void *dest,
                size_t n) {
#define SHMEM_TORCH_OP(T, NAME, OPNAME)                                                            \
    return shmem_##NAME##_##OPNAME##_reduce(w, static_cast<T *>(dest), static_cast<T *>(dest), n)
#define SHMEM_TORCH_ARITH(T, NAME)                                                                 \
    switch (op) {                                                                                  \
    case ReduceOp::SUM: SHMEM_TORCH_OP(T, NAME, sum);                                              \
    case ReduceOp::PRODUCT: SHMEM_TORCH_OP(T, NAME, prod);                                         \
    case ReduceOp::MIN: SHMEM_TORCH_OP(T, NAME, min);                                              \
    case ReduceOp::MAX: SHMEM_TORCH_OP(T, NAME, max);                                              \
    default: break;                                                                                \
    }
#define SHMEM_TORCH_INTEGER(T, NAME)                                                               \
    SHMEM_TORCH_ARITH(T, NAME)                                                                     \
    switch (op) {                                                                                  \
    case ReduceOp::BAND: SHMEM_TORCH_OP(T, NAME, and);                                             \
    case ReduceOp::BOR: SHMEM_TORCH_OP(T, NAME, or);                                               \
    case ReduceOp::BXOR: SHMEM_TORCH_OP(T, NAME, xor);                                             \
    default: break;                                                                                \
    }
    switch (dtype) {
    case at::kFloat: SHMEM_TORCH_ARITH(float, float) break;
    case at::kDouble: SHMEM_TORCH_ARITH(double, double) break;
    case at::kChar: SHMEM_TORCH_INTEGER(int8_t, int8) break;
    case at::kShort: SHMEM_TORCH_INTEGER(int16_t, int16) break;
    case at::kInt: SHMEM_TORCH_INTEGER(int32_t, int32) break;
    case at::kLong: SHMEM_TORCH_INTEGER(int64_t, int64) break;
    case at::kByte: SHMEM_TORCH_INTEGER(uint8_t, uint8) break;
    default: break;
    }
#undef SHMEM_TORCH_INTEGER
#undef SHMEM_TORCH_ARITH
#undef SHMEM_TORCH_OP
    TORCH_CHECK(false, "shmem backend: no reduction ", static_cast<int>(op), " for ", dtype);
}

const char *op_name(ReduceOp::RedOpType op) {
    switch (op) {
    case ReduceOp::SUM: return "SUM";
    case ReduceOp::AVG: return "AVG";
    case ReduceOp::PRODUCT: return "PRODUCT";
    case ReduceOp::MIN: return "MIN";
    case ReduceOp::MAX: return "MAX";
    case ReduceOp::BAND: return "BAND";
    case ReduceOp::BOR: return "BOR";
    case ReduceOp::BXOR: return "BXOR";
    case ReduceOp::PREMUL_SUM: return "PREMUL_SUM";
    default: return "UNUSED";
    }
}

// How a tensor of `dtype` is reduced with `op`: the dtype the library reduces (`work`) and the
// operation it applies; `divide` for AVG (a SUM, then a division by the group's size);
// `premul` for PREMUL_SUM (a multiplication by the factor, then a SUM).
struct ReducePlan {
    at::ScalarType work;
    ReduceOp::RedOpType op;
    bool divide = false;
    bool premul = false;
};

ReducePlan plan_reduce(const char *call, at::ScalarType dtype, ReduceOp::RedOpType op) {
    TORCH_CHECK(op <= ReduceOp::BXOR || op == ReduceOp::PREMUL_SUM, "shmem backend: ", call,
                ": ReduceOp.", op_name(op), " is not supported");
    const bool floating = at::isFloatingType(dtype);
    const bool complex = at::isComplexType(dtype);
    const bool bitwise = op == ReduceOp::BAND || op == ReduceOp::BOR || op == ReduceOp::BXOR;
    TORCH_CHECK(!(bitwise && (floating || complex)), "shmem backend: ", call, ": ReduceOp.",
                op_name(op), " needs an integer or bool tensor, got ", dtype);
    if (complex) {
        TORCH_CHECK(op == ReduceOp::SUM || op == ReduceOp::AVG || op == ReduceOp::PREMUL_SUM,
                    "shmem backend: ", call, ": ReduceOp.", op_name(op), " is not defined for ",
                    dtype);
        return {dtype == at::kComplexFloat ? at::kFloat : at::kDouble, ReduceOp::SUM,
                op == ReduceOp::AVG, op == ReduceOp::PREMUL_SUM};
    }
    if (op == ReduceOp::AVG) {
        TORCH_CHECK(floating, "shmem backend: ", call, ": ReduceOp.AVG needs a floating-point ",
                    "tensor, got ", dtype);
        return {dtype == at::kDouble ? at::kDouble : at::kFloat, ReduceOp::SUM, true};
    }
    if (op == ReduceOp::PREMUL_SUM) {
        TORCH_CHECK(floating, "shmem backend: ", call, ": ReduceOp.PREMUL_SUM needs a ",
                    "floating-point or complex tensor, got ", dtype);
        return {dtype == at::kDouble ? at::kDouble : at::kFloat, ReduceOp::SUM, false, true};
    }
    switch (dtype) {
    case at::kFloat:
    case at::kDouble:
    case at::kChar:
    case at::kShort:
    case at::kInt:
    case at::kLong:
    case at::kByte: return {dtype, op};
    case at::kHalf:
    case at::kBFloat16: return {at::kFloat, op};
    case at::kBool: {
        // bool as uint8 0/1: SUM is OR, PRODUCT is AND (torch's CPU backends do the same).
        ReduceOp::RedOpType as = op;
        if (op == ReduceOp::SUM) as = ReduceOp::BOR;
        if (op == ReduceOp::PRODUCT) as = ReduceOp::BAND;
        return {at::kByte, as};
    }
    default: TORCH_CHECK(false, "shmem backend: ", call, ": dtype ", dtype, " is not supported");
    }
}

// out[i] = first[i] `op` in[i] for `n` elements of `dtype` (a type the library reduces, as
// plan_reduce gives it); `out` may be `first` or `in`. Inlined into one copy per instruction set
// (combine_into picks one): the loops are the hot part of every reduction the backend does
// itself, and a build for baseline x86-64 would run them 16 bytes at a time.
[[gnu::always_inline]] inline void combine_loops(at::ScalarType dtype, ReduceOp::RedOpType op,
                                                 void *out, const void *first, const void *in,
                                                 size_t n) {
#define SHMEM_TORCH_LOOP(T, EXPR)                                                                  \
    {                                                                                              \
        T *o = static_cast<T *>(out);                                                              \
        const T *a = static_cast<const T *>(first);                                                \
        const T *b = static_cast<const T *>(in);                                                   \
        for (size_t i = 0; i < n; ++i) o[i] = static_cast<T>(EXPR);                                \
        return;                                                                                    \
    }
#define SHMEM_TORCH_ARITH(T)                                                                       \
    switch (op) {                                                                                  \
    case ReduceOp::SUM: SHMEM_TORCH_LOOP(T, a[i] + b[i])                                           \
    case ReduceOp::PRODUCT: SHMEM_TORCH_LOOP(T, a[i] * b[i])                                       \
    case ReduceOp::MIN: SHMEM_TORCH_LOOP(T, b[i] < a[i] ? b[i] : a[i])                             \
    case ReduceOp::MAX: SHMEM_TORCH_LOOP(T, b[i] > a[i] ? b[i] : a[i])                             \
    default: break;                                                                                \
    }
#define SHMEM_TORCH_INTEGER(T)                                                                     \
    SHMEM_TORCH_ARITH(T)                                                                           \
    switch (op) {                                                                                  \
    case ReduceOp::BAND: SHMEM_TORCH_LOOP(T, a[i] & b[i])                                          \
    case ReduceOp::BOR: SHMEM_TORCH_LOOP(T, a[i] | b[i])                                           \
    case ReduceOp::BXOR: SHMEM_TORCH_LOOP(T, a[i] ^ b[i])                                          \
    default: break;                                                                                \
    }
    switch (dtype) {
    case at::kFloat: SHMEM_TORCH_ARITH(float) break;
    case at::kDouble: SHMEM_TORCH_ARITH(double) break;
    case at::kChar: SHMEM_TORCH_INTEGER(int8_t) break;
    case at::kShort: SHMEM_TORCH_INTEGER(int16_t) break;
    case at::kInt: SHMEM_TORCH_INTEGER(int32_t) break;
    case at::kLong: SHMEM_TORCH_INTEGER(int64_t) break;
    case at::kByte: SHMEM_TORCH_INTEGER(uint8_t) break;
    default: break;
    }
#undef SHMEM_TORCH_INTEGER
#undef SHMEM_TORCH_ARITH
#undef SHMEM_TORCH_LOOP
    TORCH_CHECK(false, "shmem backend: no reduction ", static_cast<int>(op), " for ", dtype);
}

#if defined(__x86_64__)
[[gnu::target("avx2")]] void combine_avx2(at::ScalarType dtype, ReduceOp::RedOpType op, void *out,
                                          const void *first, const void *in, size_t n) {
    combine_loops(dtype, op, out, first, in, n);
}
const bool kHasAvx2 = __builtin_cpu_supports("avx2");
#endif

void combine_into(at::ScalarType dtype, ReduceOp::RedOpType op, void *out, const void *first,
                  const void *in, size_t n) {
#if defined(__x86_64__)
    if (kHasAvx2) {
        combine_avx2(dtype, op, out, first, in, n);
        return;
    }
#endif
    combine_loops(dtype, op, out, first, in, n);
}

// acc[i] = acc[i] `op` in[i]: the direct path's reduction of a peer's piece into this rank's.
void combine(at::ScalarType dtype, ReduceOp::RedOpType op, void *acc, const void *in, size_t n) {
    combine_into(dtype, op, acc, acc, in, n);
}

// Whether the backend's messages at level info are wanted (the library's SHMEM_LOG_LEVEL, or
// SHMEM_DEBUG).
bool log_info() {
    const char *level = std::getenv("SHMEM_LOG_LEVEL");
    if (level != nullptr && *level != '\0') {
        const std::string l = level;
        return l == "info" || l == "debug" || l == "trace";
    }
    const char *debug = std::getenv("SHMEM_DEBUG");
    return debug != nullptr && *debug != '\0' && std::string(debug) != "0";
}

// The direct path: single-copy collectives between the ranks of a group on one node. A rank
// reads what it needs straight out of its peers' tensors into its own with the kernel's
// cross-memory attach (process_vm_readv; all_reduce also writes its reduced slice into theirs,
// process_vm_writev), where the staged path copies every byte twice (into a peer's symmetric
// staging, then out of it). A call publishes the addresses of its tensors (an fcollect over the
// group, the one an exchange makes for its sizes anyway), each rank reads (and writes), and one
// barrier keeps every tensor alive until the last reader is done.
//
// The kernel pins every page of the peer's range it copies: over 4 KiB pages that costs more
// than the copy (a read runs at about half of memcpy's speed), over huge pages next to nothing.
// So by default (SHMEM_TORCH_DIRECT unset or "auto") the path is on where torch allocates large
// tensors in transparent huge pages: the kernel's THP mode is "always", or "madvise" and torch's
// THP_MEM_ALLOC_ENABLE=1 (tensors of 2 MiB and more then get huge pages); SHMEM_TORCH_DIRECT=1
// turns it on regardless, 0 off. It is on for a group when every member wants it, runs on this
// node (SHMEM_TEAM_SHARED holds it), and the kernel lets every member read and write every
// other's memory (Yama's ptrace_scope, a container's seccomp or capabilities may refuse): the
// members agree at the group's creation, so all take the same path. Calls whose blocks are at least
// SHMEM_TORCH_DIRECT_MIN bytes take it (default 1 MiB, the most any member asks; below that
// the system calls, the address exchange and the barriers outweigh the second copy; at 1 MiB
// blocks it was as fast as staging or faster in every A/B run on a quiet 2-CPU VM, e.g.
// all_gather_into_tensor of 1 MiB at 4 ranks in 0.75-0.98 ms against 1.45-1.48 ms).
class DirectPath {
public:
    // A piece of a read: `bytes` from the peer's address `remote` into `local`.
    struct Span {
        char *local;
        uint64_t remote;
        size_t bytes;
    };
    // Words of the sizes area setup() publishes per rank.
    static constexpr size_t kSetupWords = 5;

    // Collective over the group (team `team`, group rank `rank` of `members.size()`), with
    // `meta` a symmetric area of at least `words` (>= kSetupWords) int64 per rank for this
    // rank's, then `words` per rank for every rank's.
    void setup(shmem_team_t team, int rank, size_t size, int64_t *meta, size_t words) {
        on_ = false;
        pids_.assign(size, 0);
        if (size < 2 || words < kSetupWords) return;
        const char *env = std::getenv("SHMEM_TORCH_DIRECT");
        const std::string mode = env == nullptr || *env == '\0' ? "auto" : env;
        TORCH_CHECK(mode == "auto" || mode == "0" || mode == "1",
                    "shmem backend: ", "SHMEM_TORCH_DIRECT='", mode, "' is not auto, 0 or 1");
        const bool wanted = mode == "1" || (mode == "auto" && huge_pages());
        min_bytes_ = bytes_from_env("SHMEM_TORCH_DIRECT_MIN", size_t{1} << 20);
        std::random_device random;
        cookie_ =
            (static_cast<uint64_t>(random()) << 32) ^ random() ^ static_cast<uint64_t>(getpid());
        int64_t *mine = meta;
        int64_t *all = meta + words;
        mine[0] = getpid();
        mine[1] = static_cast<int64_t>(reinterpret_cast<uintptr_t>(&cookie_));
        mine[2] = static_cast<int64_t>(cookie_);
        mine[3] = wanted ? 1 : 0;
        mine[4] = static_cast<int64_t>(min_bytes_);
        TORCH_CHECK(shmem_fcollectmem(team, all, mine, words * sizeof(int64_t)) == 0,
                    "shmem backend: exchanging the ranks' process ids failed");
        std::string why;
        bool ok = true;
        for (size_t p = 0; p < size; ++p) {
            const int64_t *r = all + p * words;
            pids_[p] = static_cast<pid_t>(r[0]);
            ok = ok && r[3] != 0;
            min_bytes_ = std::max(min_bytes_, static_cast<size_t>(r[4]));
        }
        if (!ok)
            why =
                "SHMEM_TORCH_DIRECT=0, or tensors in 4 KiB pages (see docs/pytorch.md: "
                "THP_MEM_ALLOC_ENABLE=1, or SHMEM_TORCH_DIRECT=1) on some rank";
        for (size_t p = 0; ok && p < size; ++p) {
            if (static_cast<int>(p) == rank) continue;
            if (shmem_team_translate_pe(team, static_cast<int>(p), SHMEM_TEAM_SHARED) < 0) {
                ok = false;
                why = "rank " + std::to_string(p) + " is on another node";
                break;
            }
            const int64_t *r = all + p * words;
            uint64_t seen = 0;
            iovec local{&seen, sizeof seen};
            iovec remote{reinterpret_cast<void *>(static_cast<uintptr_t>(r[1])), sizeof seen};
            ssize_t got = process_vm_readv(pids_[p], &local, 1, &remote, 1, 0);
            // Written back as read (the peer's value stays as it is): the kernel may allow one
            // direction only (a seccomp profile).
            if (got == static_cast<ssize_t>(sizeof seen) && seen == static_cast<uint64_t>(r[2]))
                got = process_vm_writev(pids_[p], &local, 1, &remote, 1, 0);
            if (got != static_cast<ssize_t>(sizeof seen) || seen != static_cast<uint64_t>(r[2])) {
                ok = false;
                why =
                    "the kernel refuses reading or writing rank " + std::to_string(p) +
                    "'s memory (pid " + std::to_string(pids_[p]) + ": " +
                    (got < 0 ? std::string(std::strerror(errno)) : std::string("another process")) +
                    ")";
                break;
            }
        }
        // Every member reads the table before any reduces into its first word.
        mine[0] = ok ? 1 : 0;
        TORCH_CHECK(shmem_int64_min_reduce(team, mine, mine, 1) == 0,
                    "shmem backend: agreeing on the direct path failed");
        on_ = mine[0] != 0;
        static std::atomic<bool> said{false};
        if (log_info() && (rank == 0 || !why.empty()) && !said.exchange(true)) {
            std::fprintf(stderr,
                         "shmem backend: rank %d: the direct path (cross-memory attach) is %s for "
                         "a group of %zu ranks%s%s\n",
                         rank, on_ ? "on" : "off: collectives stage through symmetric scratch",
                         size, why.empty() ? "" : ": ", why.c_str());
        }
    }

    // Whether a call whose largest block is `bytes` (the same on every rank) goes direct.
    bool use(size_t bytes) const { return on_ && bytes >= min_bytes_; }
    // The same for an all_reduce of a tensor of `bytes` in slices of `slice`. Where every rank
    // has a CPU of its own, the staged path works in cache-sized pieces and keeps up with the
    // direct one up to slices of 4 blocks (at 2 ranks: 0.26 ms against 0.39-0.42 ms for 4 MiB,
    // 1.7-2.0 ms against 1.9-3.2 ms for 16 MiB). Where ranks share CPUs the staged path takes
    // the whole tensor at once, and the direct one wins from slices of a block in a tensor of 4
    // (at 4 ranks on 2 CPUs, 4 MiB: 2.1-2.8 ms against 2.4-3.5 ms; at 3, 3 MiB stays staged:
    // 0.8-0.9 ms against 1.1-1.6 ms direct, 4 and 6 MiB are even, 12 MiB 4.3 ms against 5.5-6.9).
    bool use_for_all_reduce(size_t bytes, size_t slice, bool shared_cpus) const {
        return shared_cpus ? use(slice) && use(bytes / 4) : use(slice / 4);
    }

    // Reads `spans` (none empty) from group rank `peer`, in as few system calls as the kernel's
    // iovec limit allows, a partial read continued where it stopped. An error names the call,
    // the peer and errno.
    void read(const char *call, int peer, const std::vector<Span> &spans) const {
        move(call, peer, spans, false);
    }
    // The same the other way: `spans` from here into group rank `peer`'s memory.
    void write(const char *call, int peer, const std::vector<Span> &spans) const {
        move(call, peer, spans, true);
    }

    // Bytes of each peer's slice a reduction reads at once, where it reads `peers` peers: their
    // pieces together about kPieces (at least kMinPiece each), whole pages. The system call and
    // the pinning of a read's pages cost a read of 128 KiB about a third of its time (8.7-10
    // GB/s against 13-16 GB/s from 512 KiB up, one core of a 2-CPU VM); with more the pieces
    // leave the caches (1.5 MiB of pieces beat 0.75 and 3 MiB in an all_reduce of 64 MiB at 4
    // ranks there).
    static size_t piece_bytes(int peers) {
        const size_t each = kPieces / static_cast<size_t>(std::max(peers, 1));
        return std::max(kMinPiece, each & ~size_t{4095});
    }
    // A buffer for `peers` pieces of piece_bytes(peers) (one collective at a time uses it).
    char *pieces(int peers) {
        const size_t bytes = piece_bytes(peers) * static_cast<size_t>(std::max(peers, 1));
        if (pieces_bytes_ < bytes) {
            pieces_.reset(static_cast<char *>(std::aligned_alloc(4096, bytes)));
            TORCH_CHECK(pieces_, "shmem backend: allocating ", bytes, " bytes failed");
            pieces_bytes_ = bytes;
        }
        return pieces_.get();
    }
    static constexpr size_t kPieces = size_t{3} << 19;  // 1.5 MiB
    static constexpr size_t kMinPiece = size_t{64} << 10;

private:
    // read() (`out` false) or write().
    void move(const char *call, int peer, const std::vector<Span> &spans, bool out) const {
        constexpr size_t kIov = 1024;  // IOV_MAX
        iovec local[kIov], remote[kIov];
        size_t i = 0, done = 0;  // spans[i] has `done` bytes moved
        while (i < spans.size()) {
            size_t k = 0;
            for (size_t j = i; j < spans.size() && k < kIov; ++j, ++k) {
                const size_t skip = j == i ? done : 0;
                local[k] = {spans[j].local + skip, spans[j].bytes - skip};
                remote[k] = {
                    reinterpret_cast<void *>(static_cast<uintptr_t>(spans[j].remote + skip)),
                    spans[j].bytes - skip};
            }
            const ssize_t got = out ? process_vm_writev(pids_[peer], local, k, remote, k, 0)
                                    : process_vm_readv(pids_[peer], local, k, remote, k, 0);
            if (got < 0 && errno == EINTR) continue;
            const int e = errno;
            TORCH_CHECK(got > 0, "shmem backend: ", call, out ? ": writing " : ": reading ",
                        spans[i].bytes - done, out ? " bytes to rank " : " bytes from rank ", peer,
                        " (pid ", pids_[peer], ") by ",
                        out ? "process_vm_writev" : "process_vm_readv",
                        " failed: ", got < 0 ? std::strerror(e) : "nothing moved", " (errno ",
                        got < 0 ? e : 0, e == ESRCH ? "; the rank's process has ended)" : ")");
            for (size_t left = static_cast<size_t>(got); left > 0;) {
                const size_t rest = spans[i].bytes - done;
                if (left < rest) {
                    done += left;
                    break;
                }
                left -= rest;
                ++i;
                done = 0;
            }
        }
    }

    // Whether torch puts large tensors in transparent huge pages (see the top).
    static bool huge_pages() {
        char mode[128] = {0};
        if (FILE *f = std::fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r")) {
            const size_t got = std::fread(mode, 1, sizeof mode - 1, f);
            mode[got] = '\0';
            std::fclose(f);
        }
        if (std::strstr(mode, "[always]") != nullptr) return true;
        const char *torch = std::getenv("THP_MEM_ALLOC_ENABLE");
        return std::strstr(mode, "[madvise]") != nullptr && torch != nullptr &&
               std::string(torch) == "1";
    }

    bool on_ = false;
    size_t min_bytes_ = 0;
    std::vector<pid_t> pids_;  // of each group rank
    uint64_t cookie_ = 0;      // a value the others read here to prove they can
    struct Free {
        void operator()(char *p) const { std::free(p); }
    };
    std::unique_ptr<char, Free> pieces_;
    size_t pieces_bytes_ = 0;
};

class ShmemBackend final : public c10d::Backend {
public:
    // The group of global ranks `ranks` (in group-rank order; empty: torch's default group, all
    // of them) of a world of `world` ranks, on its members only.
    ShmemBackend(const c10::intrusive_ptr<c10d::Store> &store, int rank, int size,
                 std::chrono::milliseconds timeout, std::vector<int> ranks, int world)
        : Backend(rank, size),
          options_(c10::make_intrusive<Backend::Options>(kName, timeout)),
          watchdog_(rank) {
        bool all = ranks.empty();
        if (!all && static_cast<int>(ranks.size()) == world) {
            all = true;
            for (int i = 0; i < world; ++i) all = all && ranks[i] == i;
        }
        if (all) {
            join_world(store, rank, size);
        } else {
            join_group(std::move(ranks), world);
        }
        const size_t n = static_cast<size_t>(size);
        chunks_sent_.assign(n, 0);
        chunks_taken_.assign(n, 0);
        partial_.resize(n);
        stash_.resize(n);
        send_posted_.assign(n, 0);
        send_served_.assign(n, 0);
        // The direct and mapped paths read and write memory with the CPU: host memory only.
        if (heap_ == SHMEMX_HEAP_HOST) {
            direct_.setup(team_, rank, n, meta_, meta_bytes_ / sizeof(int64_t));
        } else {
            mapped_ = 0;
            static std::atomic<bool> said{false};
            if (log_info() && rank == 0 && !said.exchange(true))
                std::fprintf(stderr,
                             "shmem backend: the symmetric heap is on cuda:%d: collectives stage "
                             "through it with the driver's copies and reduce on the host "
                             "(correct, not fast: docs/pytorch.md, CUDA tensors)\n",
                             heap_index_);
        }
    }

    // A group of the parent's ranks `ranks` (split_group), on its members; nullptr elsewhere.
    c10::intrusive_ptr<c10d::Backend> split(const c10::intrusive_ptr<c10d::Store> &store,
                                            const std::vector<int> &ranks,
                                            const c10::intrusive_ptr<Options> &opts) override {
        auto it = std::find(ranks.begin(), ranks.end(), getRank());
        if (it == ranks.end()) return nullptr;
        std::vector<int> global;
        for (int r : ranks) {
            check_peer("split_group", "rank", r);
            global.push_back(members_[r]);
        }
        const auto timeout = opts ? opts->timeout : options_->timeout;
        return c10::make_intrusive<ShmemBackend>(store, static_cast<int>(it - ranks.begin()),
                                                 static_cast<int>(ranks.size()), timeout,
                                                 std::move(global), shmem_n_pes());
    }
    bool supportsSplitting() const override { return true; }

    ~ShmemBackend() override = default;

    const std::string getBackendName() const override { return kName; }
    c10::intrusive_ptr<Options> getBackendOptions() override { return options_; }
    void setTimeout(std::chrono::milliseconds timeout) override { options_->timeout = timeout; }

    // destroy_process_group, on every rank: the scratch goes back to the heap.
    void shutdown() override {
        std::lock_guard<std::mutex> lock(mutex_);
        if (meta_ == nullptr) return;
        if (team_ != SHMEM_TEAM_WORLD) {
            // A group of some ranks: nothing collective here (see GroupArena::retire); its
            // region goes back with its team's slot.
            shmem_quiet();
            group_arena().retire(members_, made_, team_);
            team_ = SHMEM_TEAM_INVALID;
            meta_ = nullptr;
            mail_ = nullptr;
            return;
        }
        shmem_barrier_all();
        group_arena().release();
        if (data_ != nullptr) shmem_free(data_);
        if (staging_ != nullptr) shmem_free(staging_);
        shmem_free(mail_);
        mail_ = nullptr;
        shmem_free(meta_);
        data_ = nullptr;
        data_bytes_ = 0;
        staging_ = nullptr;
        staging_bytes_ = 0;
        meta_ = nullptr;
    }

    WorkPtr allreduce(std::vector<at::Tensor> &tensors,
                      const c10d::AllreduceOptions &opts) override {
        const at::Tensor &t = one(tensors, "allreduce");
        reduce_all("allreduce", t, opts.reduceOp, /*root=*/-1);
        return done(OpType::ALLREDUCE, tensors);
    }

    WorkPtr allreduce_coalesced(std::vector<at::Tensor> &tensors,
                                const c10d::AllreduceCoalescedOptions &opts) override {
        for (auto &t : tensors) {
            check_tensor("allreduce_coalesced", t);
            reduce_all("allreduce_coalesced", t, opts.reduceOp, -1);
        }
        return done(OpType::ALLREDUCE_COALESCED, tensors);
    }

    WorkPtr reduce(std::vector<at::Tensor> &tensors, const c10d::ReduceOptions &opts) override {
        const at::Tensor &t = one(tensors, "reduce");
        check_root("reduce", opts.rootRank);
        reduce_all("reduce", t, opts.reduceOp, static_cast<int>(opts.rootRank));
        return done(OpType::REDUCE, tensors);
    }

    WorkPtr broadcast(std::vector<at::Tensor> &tensors,
                      const c10d::BroadcastOptions &opts) override {
        const at::Tensor &t = one(tensors, "broadcast");
        check_root("broadcast", opts.rootRank);
        const Collective lock(*this, "broadcast");
        const size_t bytes = t.nbytes();
        const bool root = getRank() == opts.rootRank;
        at::Tensor c = bytes > 0 ? t.contiguous() : t;
        const size_t step = step_of(bytes, 1, 2);
        for (size_t at = 0; at < bytes; at += step) {
            const size_t len = std::min(step, bytes - at);
            char *src = scratch("broadcast", 2 * step);
            char *dst = src + step;
            char *mine = static_cast<char *>(c.data_ptr()) + at;
            if (root) copy(src, mine, len);
            check_rc("broadcast",
                     shmem_broadcastmem(team_, dst, src, len, static_cast<int>(opts.rootRank)));
            if (!root) copy(mine, dst, len);
        }
        if (bytes > 0 && !root && !c.is_same(t)) const_cast<at::Tensor &>(t).copy_(c);
        return done(OpType::BROADCAST, tensors);
    }

    WorkPtr allgather(std::vector<std::vector<at::Tensor>> &outputs,
                      std::vector<at::Tensor> &inputs, const c10d::AllgatherOptions &) override {
        const at::Tensor &in = one(inputs, "allgather");
        TORCH_CHECK(outputs.size() == 1, "shmem backend: allgather: expected one output list, got ",
                    outputs.size());
        auto &list = outputs[0];
        check_list("allgather", "output_tensor_list", list, in);
        const Collective lock(*this, "allgather");
        const size_t bytes = in.nbytes();
        if (direct_.use(bytes)) {
            std::vector<Block> blocks(getSize());
            const std::vector<at::Tensor> outs = contiguous(list, blocks);
            const at::Tensor c = in.contiguous();
            if (direct_gather("allgather", c, blocks)) {
                copy_back(list, outs);
                return done(OpType::ALLGATHER, list);
            }
        }
        at::Tensor hold;
        char *dst = gather_all("allgather", in, bytes, hold);
        for (int i = 0; i < getSize(); ++i) {
            at::Tensor c = list[i].contiguous();
            copy_out(list[i], c, dst + i * bytes);
        }
        return done(OpType::ALLGATHER, list);
    }

    WorkPtr _allgather_base(at::Tensor &output, at::Tensor &input,
                            const c10d::AllgatherOptions &) override {
        check_tensor("_allgather_base", input);
        check_tensor("_allgather_base", output);
        check_same_dtype("_allgather_base", output, input);
        TORCH_CHECK(output.numel() == input.numel() * getSize(),
                    "shmem backend: ", "all_gather_into_tensor: the output has ", output.numel(),
                    " elements, not the input's ", input.numel(), " times the group's ", getSize());
        const Collective lock(*this, "all_gather_into_tensor");
        const size_t bytes = input.nbytes();
        if (direct_.use(bytes)) {
            at::Tensor o = output.contiguous();
            std::vector<Block> blocks(getSize());
            for (int i = 0; i < getSize(); ++i)
                blocks[i] = {static_cast<char *>(o.data_ptr()) + i * bytes,
                             static_cast<int64_t>(bytes)};
            if (direct_gather("all_gather_into_tensor", input.contiguous(), blocks)) {
                if (!o.is_same(output)) output.copy_(o);
                return done(OpType::_ALLGATHER_BASE, {output});
            }
        }
        at::Tensor hold;
        char *dst = gather_all("all_gather_into_tensor", input, input.nbytes(), hold);
        at::Tensor c = output.contiguous();
        copy_out(output, c, dst);
        return done(OpType::_ALLGATHER_BASE, {output});
    }

    // outputs[r][k]: rank r's tensor k (gloo's layout).
    WorkPtr allgather_coalesced(std::vector<std::vector<at::Tensor>> &outputs,
                                std::vector<at::Tensor> &inputs,
                                const c10d::AllgatherOptions &opts) override {
        TORCH_CHECK(static_cast<int>(outputs.size()) == getSize(),
                    "shmem backend: ", "allgather_coalesced: ", outputs.size(),
                    " output lists, not the group's ", getSize());
        std::vector<at::Tensor> all;
        for (size_t k = 0; k < inputs.size(); ++k) {
            std::vector<std::vector<at::Tensor>> out(1);
            for (auto &list : outputs) {
                TORCH_CHECK(list.size() == inputs.size(),
                            "shmem backend: allgather_coalesced: ", "an output list has ",
                            list.size(), " tensors for ", inputs.size(), " inputs");
                out[0].push_back(list[k]);
            }
            std::vector<at::Tensor> in{inputs[k]};
            allgather(out, in, opts);
        }
        for (auto &list : outputs) all.insert(all.end(), list.begin(), list.end());
        return done(OpType::ALLGATHER_COALESCED, all);
    }

    WorkPtr allgather_into_tensor_coalesced(std::vector<at::Tensor> &outputs,
                                            std::vector<at::Tensor> &inputs,
                                            const c10d::AllgatherOptions &opts) override {
        TORCH_CHECK(outputs.size() == inputs.size(),
                    "shmem backend: ", "allgather_into_tensor_coalesced: ", outputs.size(),
                    " outputs for ", inputs.size(), " inputs");
        for (size_t k = 0; k < inputs.size(); ++k) _allgather_base(outputs[k], inputs[k], opts);
        return done(OpType::COALESCED, outputs);
    }

    WorkPtr reduce_scatter(std::vector<at::Tensor> &outputs,
                           std::vector<std::vector<at::Tensor>> &inputs,
                           const c10d::ReduceScatterOptions &opts) override {
        const at::Tensor &out = one(outputs, "reduce_scatter");
        TORCH_CHECK(inputs.size() == 1, "shmem backend: reduce_scatter: expected one input list, ",
                    "got ", inputs.size());
        check_list("reduce_scatter", "input_list", inputs[0], out);
        reduce_slice("reduce_scatter", at::cat(flatten_all(inputs[0])), out, opts.reduceOp);
        return done(OpType::REDUCE_SCATTER, outputs);
    }

    WorkPtr _reduce_scatter_base(at::Tensor &output, at::Tensor &input,
                                 const c10d::ReduceScatterOptions &opts) override {
        check_tensor("_reduce_scatter_base", input);
        check_tensor("_reduce_scatter_base", output);
        check_same_dtype("reduce_scatter_tensor", output, input);
        TORCH_CHECK(input.numel() == output.numel() * getSize(),
                    "shmem backend: ", "reduce_scatter_tensor: the input has ", input.numel(),
                    " elements, not the output's ", output.numel(), " times the group's ",
                    getSize());
        reduce_slice("reduce_scatter_tensor", input, output, opts.reduceOp);
        return done(OpType::_REDUCE_SCATTER_BASE, {output});
    }

    WorkPtr reduce_scatter_tensor_coalesced(std::vector<at::Tensor> &outputs,
                                            std::vector<at::Tensor> &inputs,
                                            const c10d::ReduceScatterOptions &opts) override {
        TORCH_CHECK(outputs.size() == inputs.size(),
                    "shmem backend: ", "reduce_scatter_tensor_coalesced: ", outputs.size(),
                    " outputs for ", inputs.size(), " inputs");
        for (size_t k = 0; k < inputs.size(); ++k)
            _reduce_scatter_base(outputs[k], inputs[k], opts);
        return done(OpType::COALESCED, outputs);
    }

    WorkPtr alltoall_base(at::Tensor &output, at::Tensor &input, std::vector<int64_t> &outputSplits,
                          std::vector<int64_t> &inputSplits,
                          const c10d::AllToAllOptions &) override {
        static constexpr const char *kCall = "all_to_all_single";
        check_tensor(kCall, input);
        check_tensor(kCall, output);
        check_same_dtype(kCall, output, input);
        const int n = getSize();
        const auto rows = [&](const at::Tensor &t, std::vector<int64_t> &splits, const char *what) {
            const int64_t dim0 = t.dim() == 0 ? 1 : t.size(0);
            if (splits.empty()) {
                TORCH_CHECK(dim0 % n == 0, "shmem backend: ", kCall, ": the ", what,
                            "'s first dimension ", dim0, " does not split evenly over ", n,
                            " ranks");
                return std::vector<int64_t>(n, dim0 / n);
            }
            TORCH_CHECK(static_cast<int>(splits.size()) == n, "shmem backend: ", kCall, ": ", what,
                        "_split_sizes has ", splits.size(), " entries, not ", n);
            int64_t sum = 0;
            for (int64_t s : splits) {
                TORCH_CHECK(s >= 0, "shmem backend: ", kCall, ": ", what,
                            "_split_sizes holds a negative size ", s);
                sum += s;
            }
            TORCH_CHECK(sum == dim0, "shmem backend: ", kCall, ": ", what,
                        "_split_sizes adds up to ", sum, " but the ", what,
                        "'s first dimension is ", dim0);
            return splits;
        };
        const std::vector<int64_t> in_rows = rows(input, inputSplits, "input");
        const std::vector<int64_t> out_rows = rows(output, outputSplits, "output");
        const int64_t in_row = input.dim() == 0 || input.size(0) == 0
                                   ? 0
                                   : static_cast<int64_t>(input.nbytes()) / input.size(0);
        const int64_t out_row = output.dim() == 0 || output.size(0) == 0
                                    ? 0
                                    : static_cast<int64_t>(output.nbytes()) / output.size(0);
        // Equal splits (none given): every rank sends and receives dim0 / n rows to and from
        // every rank, so the sizes are known alike everywhere once this rank's agree.
        const bool even = inputSplits.empty() && outputSplits.empty();
        TORCH_CHECK(!even || input.nbytes() == output.nbytes(), "shmem backend: ", kCall,
                    ": without split sizes the output must be as large as the input, got ",
                    output.nbytes(), " and ", input.nbytes(), " bytes");
        at::Tensor in = input.contiguous();
        at::Tensor out = output.contiguous();
        std::vector<Block> send(n), recv(n);
        int64_t so = 0, ro = 0;
        for (int j = 0; j < n; ++j) {
            send[j] = {static_cast<char *>(in.data_ptr()) + so, in_rows[j] * in_row};
            recv[j] = {static_cast<char *>(out.data_ptr()) + ro, out_rows[j] * out_row};
            so += send[j].bytes;
            ro += recv[j].bytes;
        }
        const int64_t b = n == 0 ? 0 : static_cast<int64_t>(input.nbytes()) / n;
        if (even && !direct_.use(static_cast<size_t>(b))) {
            locked_transfer(kCall, std::vector<int64_t>(static_cast<size_t>(n) * n, b), send, recv);
        } else {
            locked_exchange(kCall, send, recv);
        }
        if (!out.is_same(output)) output.copy_(out);
        return done(OpType::ALLTOALL_BASE, {output});
    }

    WorkPtr alltoall(std::vector<at::Tensor> &outputs, std::vector<at::Tensor> &inputs,
                     const c10d::AllToAllOptions &) override {
        static constexpr const char *kCall = "all_to_all";
        const int n = getSize();
        TORCH_CHECK(static_cast<int>(outputs.size()) == n && static_cast<int>(inputs.size()) == n,
                    "shmem backend: ", kCall, ": expected ", n, " outputs and inputs, got ",
                    outputs.size(), " and ", inputs.size());
        for (int j = 0; j < n; ++j) {
            check_tensor(kCall, inputs[j]);
            check_tensor(kCall, outputs[j]);
            check_same_dtype(kCall, outputs[j], inputs[j]);
        }
        std::vector<Block> send(n), recv(n);
        const std::vector<at::Tensor> ins = contiguous(inputs, send);
        const std::vector<at::Tensor> outs = contiguous(outputs, recv);
        locked_exchange(kCall, send, recv);
        copy_back(outputs, outs);
        return done(OpType::ALLTOALL, outputs);
    }

    WorkPtr gather(std::vector<std::vector<at::Tensor>> &outputs, std::vector<at::Tensor> &inputs,
                   const c10d::GatherOptions &opts) override {
        static constexpr const char *kCall = "gather";
        const at::Tensor &in = one(inputs, kCall);
        const int root = static_cast<int>(opts.rootRank);
        std::vector<at::Tensor> *list = root_list(kCall, "gather_list", outputs, in, root);
        std::vector<Block> send(getSize()), recv(getSize());
        const at::Tensor c = in.contiguous();
        send[root] = block(c);
        const std::vector<at::Tensor> outs =
            list ? contiguous(*list, recv) : std::vector<at::Tensor>{};
        // Every rank sends the root a tensor like its own (the root's list holds tensors like
        // its input): sent(i, root) is this rank's size on every rank.
        std::vector<int64_t> sizes(static_cast<size_t>(getSize()) * getSize(), 0);
        for (int i = 0; i < getSize(); ++i) sizes[i * getSize() + root] = send[root].bytes;
        locked_transfer(kCall, sizes, send, recv);
        if (list) copy_back(*list, outs);
        return done(OpType::GATHER, list ? *list : std::vector<at::Tensor>{});
    }

    WorkPtr scatter(std::vector<at::Tensor> &outputs, std::vector<std::vector<at::Tensor>> &inputs,
                    const c10d::ScatterOptions &opts) override {
        static constexpr const char *kCall = "scatter";
        const at::Tensor &out = one(outputs, kCall);
        const int root = static_cast<int>(opts.rootRank);
        std::vector<at::Tensor> *list = root_list(kCall, "scatter_list", inputs, out, root);
        std::vector<Block> send(getSize()), recv(getSize());
        const at::Tensor o = out.contiguous();
        recv[root] = block(o);
        const std::vector<at::Tensor> ins =
            list ? contiguous(*list, send) : std::vector<at::Tensor>{};
        // The root sends every rank a tensor like its output: sent(root, j) is this rank's size.
        std::vector<int64_t> sizes(static_cast<size_t>(getSize()) * getSize(), 0);
        for (int j = 0; j < getSize(); ++j) sizes[root * getSize() + j] = recv[root].bytes;
        locked_transfer(kCall, sizes, send, recv);
        copy_back(outputs, {o});
        return done(OpType::SCATTER, outputs);
    }

    WorkPtr barrier(const c10d::BarrierOptions &) override {
        {
            const Collective lock(*this, "barrier");
            sync();
        }
        return done(OpType::BARRIER, {});
    }

    // Point to point, through the mailboxes (see the top).
    WorkPtr send(std::vector<at::Tensor> &tensors, int dst, int tag) override {
        const at::Tensor &t = one(tensors, "send");
        check_peer("send", "dst", dst);
        int64_t ticket;
        {
            std::lock_guard<std::mutex> lock(p2p_mutex_);
            ticket = send_posted_[dst]++;
        }
        at::Tensor c = t.contiguous();
        // The thread's puts read `c`: what torch queued on this thread's stream is done first.
        settle();
        auto work = c10::make_intrusive<ThreadWork>(getRank(), OpType::SEND, t);
        work->start([this, c, dst, tag, ticket] {
            const auto deadline = std::chrono::steady_clock::now() + options_->timeout;
            {
                std::unique_lock<std::mutex> lock(p2p_mutex_);
                const bool turn = send_cv_.wait_until(lock, deadline,
                                                      [&] { return send_served_[dst] == ticket; });
                TORCH_CHECK(turn, "shmem backend: send to rank ", dst, " (tag ", tag,
                            "): the sends before it did not finish within the group's timeout of ",
                            options_->timeout.count(), " ms");
            }
            try {
                put_message(dst, tag, static_cast<const char *>(c.data_ptr()), c.nbytes(),
                            deadline);
            } catch (...) {
                finish_send(dst);
                throw;
            }
            finish_send(dst);
            return dst;
        });
        return work;
    }

    WorkPtr recv(std::vector<at::Tensor> &tensors, int src, int tag) override {
        const at::Tensor &t = one(tensors, "recv");
        check_peer("recv", "src", src);
        int64_t ticket;
        {
            std::lock_guard<std::mutex> lock(p2p_mutex_);
            ticket = recv_posted_[{src, tag}]++;
        }
        settle();  // what torch queued on `t` before is done when the thread writes it
        auto work = c10::make_intrusive<ThreadWork>(getRank(), OpType::RECV, t);
        work->start([this, t, src, tag, ticket] {
            std::vector<char> bytes;
            try {
                await("recv from rank " + std::to_string(src), tag, [&] {
                    take_progress(src);
                    if (recv_taken_[{src, tag}] != ticket || !take(src, tag, bytes)) return false;
                    ++recv_taken_[{src, tag}];
                    pass_abandoned({src, tag});
                    return true;
                });
            } catch (...) {
                // A recv that timed out gives up its turn: the later recvs of this sender and
                // tag are not kept waiting for it (its message goes to the next one, as gloo's).
                std::lock_guard<std::mutex> lock(p2p_mutex_);
                abandoned_[{src, tag}].insert(ticket);
                pass_abandoned({src, tag});
                throw;
            }
            deliver(t, bytes, src);
            return src;
        });
        return work;
    }

    WorkPtr recvAnysource(std::vector<at::Tensor> &tensors, int tag) override {
        const at::Tensor &t = one(tensors, "recv");
        settle();  // as in recv
        auto work = c10::make_intrusive<ThreadWork>(getRank(), OpType::RECVANYSOURCE, t);
        work->start([this, t, tag] {
            std::vector<char> bytes;
            int from = -1;
            await("recv from any source", tag, [&] {
                for (int src = 0; src < getSize(); ++src) {
                    take_progress(src);
                    if (take(src, tag, bytes)) {
                        from = src;
                        return true;
                    }
                }
                return false;
            });
            deliver(t, bytes, from);
            return from;
        });
        return work;
    }

private:
    // The group of all ranks: the job (joined or started here), SHMEM_TEAM_WORLD, scratch that
    // grows, and the groups' arena.
    void join_world(const c10::intrusive_ptr<c10d::Store> &store, int rank, int size) {
        join_job(store, rank, size);
        heap_ = shmemx_heap_device(&heap_index_);
        TORCH_CHECK(heap_ == SHMEMX_HEAP_HOST || heap_ == SHMEMX_HEAP_CUDA,
                    "shmem backend: the symmetric heap must be in host memory or an NVIDIA GPU's ",
                    "(SHMEM_DEVICE=cuda), not on the npu device: unset SHMEM_DEVICE");
        TORCH_CHECK(shmem_n_pes() == size && shmem_my_pe() == rank,
                    "shmem backend: the group of all ", size, " ranks (this one ", rank,
                    ") needs a job of as many PEs numbered as the ranks, but the job has ",
                    shmem_n_pes(), " PEs (this one ", shmem_my_pe(), ")");
        team_ = SHMEM_TEAM_WORLD;
        members_.resize(size);
        for (int i = 0; i < size; ++i) members_[i] = i;
        // The sizes area: 3n+1 int64 from every PE gathered into (3n+1)*n (see exchange()).
        const size_t n = static_cast<size_t>(size);
        meta_bytes_ = (3 * n + 1) * sizeof(int64_t);
        meta_ = static_cast<int64_t *>(shmem_malloc(meta_bytes_ * (n + 1)));
        TORCH_CHECK(meta_ != nullptr, "shmem backend: the symmetric heap has no room for ",
                    meta_bytes_ * (n + 1), " bytes");
        // The mailboxes (zeroed, their signals and acknowledgements with them).
        mail_chunk_ = kMailChunk;
        const size_t mail_bytes = n * (kMailHeader + mail_chunk_) + 2 * n * sizeof(uint64_t);
        mail_ = static_cast<char *>(shmem_calloc(mail_bytes, 1));
        TORCH_CHECK(mail_ != nullptr, "shmem backend: the symmetric heap has no room for ",
                    mail_bytes, " bytes of mailboxes");
        mail_sig_ = reinterpret_cast<uint64_t *>(mail_ + n * (kMailHeader + mail_chunk_));
        mail_ack_ = mail_sig_ + n;
        group_arena().acquire(heap_ != SHMEMX_HEAP_HOST);
    }

    // A group of some ranks (global ranks `ranks`, in group-rank order, of a world of `world`):
    // its members make its team, and its scratch is the arena's region of the team's slot,
    // laid out as: the sizes area, the mailboxes, the data area, the two staging halves.
    void join_group(std::vector<int> ranks, int world) {
        const std::string text = ranks_text(ranks);
        TORCH_CHECK(aclshmemx_init_status() == ACLSHMEM_STATUS_IS_INITIALIZED,
                    "shmem backend: the group of ranks ", text, " needs the job that a group ",
                    "of all ranks with backend \"shmem\" starts: make the default group (or ",
                    "new_group of every rank) with the shmem backend first");
        TORCH_CHECK(shmem_n_pes() == world && shmem_my_pe() == ranks[getRank()],
                    "shmem backend: the group of ranks ", text, " (this rank ", ranks[getRank()],
                    ") needs torch's global ranks to be the job's PEs, but the job has ",
                    shmem_n_pes(), " PEs (this one ", shmem_my_pe(), ") for ", world, " ranks");
        heap_ = shmemx_heap_device(&heap_index_);
        shmem_team_t team = SHMEM_TEAM_INVALID;
        TORCH_CHECK(shmemx_team_create(ranks.data(), static_cast<int>(ranks.size()), nullptr, 0,
                                       &team) == 0,
                    "shmem backend: making the team of ranks ", text, " failed (see the ",
                    "library's message above; at most 62 teams at once per rank)");
        team_ = team;
        made_ = group_arena().count_of(ranks);
        members_ = std::move(ranks);
        char *region = group_arena().region_of(shmemx_team_index(team_));
        if (region == nullptr) {
            shmem_team_destroy(team_);
            team_ = SHMEM_TEAM_INVALID;
            TORCH_CHECK(false, "shmem backend: the group of ranks ", text, " has no scratch: ",
                        "no group of all ranks with backend \"shmem\" is alive, or the heap had ",
                        "no room for the groups' ", GroupArena::kSlots - GroupArena::kFirstSlot,
                        " regions of SHMEM_TORCH_GROUP_SCRATCH bytes (", group_arena().region,
                        " each) when it was made: lower that or raise SHMEM_SYMMETRIC_SIZE");
        }
        const size_t bytes = group_arena().region;
        const size_t n = members_.size();
        const auto up = [](size_t b) { return (b + 63) & ~size_t{63}; };
        meta_bytes_ = (3 * n + 1) * sizeof(int64_t);
        const size_t meta = up(meta_bytes_ * (n + 1));
        // A mailbox per sender, a quarter of the region for all of them.
        mail_chunk_ = std::min(kMailChunk, (bytes / 4 / n) & ~size_t{63});
        mail_chunk_ = mail_chunk_ > kMailHeader ? mail_chunk_ - kMailHeader : 0;
        const size_t mail = up(n * (kMailHeader + mail_chunk_) + 2 * n * sizeof(uint64_t));
        const size_t rest = bytes > meta + mail ? bytes - meta - mail : 0;
        data_bytes_ = (rest / 2) & ~size_t{63};
        staging_bytes_ = (rest - data_bytes_) & ~size_t{127};
        if (mail_chunk_ < 64 || data_bytes_ < 1024 || staging_bytes_ < 1024) {
            shmem_team_destroy(team_);
            team_ = SHMEM_TEAM_INVALID;
            TORCH_CHECK(false, "shmem backend: SHMEM_TORCH_GROUP_SCRATCH=", bytes, " bytes is ",
                        "too small for a group of ", n, " ranks: raise it");
        }
        meta_ = reinterpret_cast<int64_t *>(region);
        mail_ = region + meta;
        mail_sig_ = reinterpret_cast<uint64_t *>(mail_ + n * (kMailHeader + mail_chunk_));
        mail_ack_ = mail_sig_ + n;
        data_ = mail_ + mail;
        staging_ = data_ + data_bytes_;
        fixed_ = true;
        // The region last served another team of this slot: zeroed (the mailboxes' counts)
        // before any member puts into it.
        if (heap_ == SHMEMX_HEAP_HOST) {
            std::memset(region, 0, bytes);
        } else {
            const std::vector<char> zeros(std::min(bytes, size_t{1} << 20), 0);
            for (size_t at = 0; at < bytes; at += zeros.size())
                copy(region + at, zeros.data(), std::min(zeros.size(), bytes - at));
        }
        shmem_team_sync(team_);
    }

    // World PE of group rank `r`.
    int pe(int r) const { return members_[static_cast<size_t>(r)]; }

    // Completes this rank's puts and waits for every member's (a barrier over the group).
    void sync() {
        if (team_ == SHMEM_TEAM_WORLD) {
            shmem_barrier_all();
            return;
        }
        shmem_quiet();
        shmem_team_sync(team_);
    }

    // Bytes of `bytes` a collective stages at once, in `parts` pieces of whole `unit`s: all of
    // them where the scratch grows (the group of all ranks), else what the region's data area
    // holds.
    size_t step_of(size_t bytes, size_t unit, size_t parts) const {
        if (!fixed_) return bytes;
        const size_t fit = data_bytes_ / parts / unit * unit;
        TORCH_CHECK(fit > 0, "shmem backend: a group's scratch of ", data_bytes_,
                    " bytes cannot hold ", parts, " pieces of ", unit,
                    " bytes: raise SHMEM_TORCH_GROUP_SCRATCH");
        return std::min(bytes, fit);
    }

    // settle() of the heap's GPU (settle.h): the tensors hold what the program's kernels wrote
    // before the backend reads them, and nothing queued before reads them after it writes them.
    void settle() const {
        if (heap_ == SHMEMX_HEAP_CUDA)
            shmem_torch::settle(
                c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(heap_index_)));
    }

    // `n` bytes from `src` to `dst`, either of them the scratch, a tensor's memory or host
    // memory: memcpy where the heap is host memory. With the heap in GPU memory, after settle(),
    // the library's copies to and from this PE's heap (synchronous copies of the driver, which
    // tells host from GPU memory by the address), and between two places off the heap through
    // the arena's bounce area.
    void copy(void *dst, const void *src, size_t n) const {
        if (n == 0) return;
        if (heap_ == SHMEMX_HEAP_HOST) {
            std::memcpy(dst, src, n);
            return;
        }
        settle();
        const int me = shmem_my_pe();
        if (shmem_addr_accessible(dst, me)) {
            shmem_putmem(dst, src, n, me);
        } else if (shmem_addr_accessible(src, me)) {
            shmem_getmem(dst, src, n, me);
        } else {
            group_arena().bounce_copy(dst, src, n);
        }
    }

    struct Block {
        char *data = nullptr;
        int64_t bytes = 0;
    };

    static Block block(const at::Tensor &contiguous) {
        return {static_cast<char *>(contiguous.data_ptr()),
                static_cast<int64_t>(contiguous.nbytes())};
    }

    // The contiguous forms of `list` (the tensors themselves where they are), their blocks into
    // `blocks`.
    static std::vector<at::Tensor> contiguous(const std::vector<at::Tensor> &list,
                                              std::vector<Block> &blocks) {
        std::vector<at::Tensor> out;
        for (size_t j = 0; j < list.size(); ++j) {
            out.push_back(list[j].contiguous());
            blocks[j] = block(out[j]);
        }
        return out;
    }

    // Back into `list` where contiguous() had to copy.
    static void copy_back(std::vector<at::Tensor> &list, const std::vector<at::Tensor> &from) {
        for (size_t j = 0; j < list.size(); ++j)
            if (!from[j].is_same(list[j])) list[j].copy_(from[j]);
    }

    // gather's and scatter's list: the root's one list (checked against `like`), nullptr on the
    // other ranks, which must give none.
    std::vector<at::Tensor> *root_list(const char *call, const char *name,
                                       std::vector<std::vector<at::Tensor>> &lists,
                                       const at::Tensor &like, int root) {
        check_root(call, root);
        if (getRank() != root) {
            TORCH_CHECK(lists.empty() || lists[0].empty(), "shmem backend: ", call, ": ", name,
                        " must be empty on non-root ranks");
            return nullptr;
        }
        TORCH_CHECK(lists.size() == 1, "shmem backend: ", call, ": expected one ", name,
                    " on the root, got ", lists.size());
        check_list(call, name, lists[0], like);
        return &lists[0];
    }

    void locked_exchange(const char *call, const std::vector<Block> &send,
                         const std::vector<Block> &recv) {
        const Collective lock(*this, call);
        exchange(call, send, recv);
    }

    void locked_transfer(const char *call, const std::vector<int64_t> &sent,
                         const std::vector<Block> &send, const std::vector<Block> &recv) {
        const Collective lock(*this, call);
        transfer(call, sent, send, recv);
    }

    const at::Tensor &one(std::vector<at::Tensor> &tensors, const char *call) {
        TORCH_CHECK(tensors.size() == 1, "shmem backend: ", call, ": expected one tensor, got ",
                    tensors.size());
        check_tensor(call, tensors[0]);
        return tensors[0];
    }

    // A tensor the collectives take: a dense CPU tensor, or with the heap in GPU memory a dense
    // tensor on the heap's GPU.
    void check_tensor(const char *call, const at::Tensor &t) const {
        TORCH_CHECK(t.defined(), "shmem backend: ", call, ": undefined tensor");
        if (t.device().is_cuda()) {
            TORCH_CHECK(heap_ == SHMEMX_HEAP_CUDA, "shmem backend: ", call, ": a tensor on ",
                        t.device(), " needs the symmetric heap in GPU memory (SHMEM_DEVICE=cuda); ",
                        "the heap is in host memory");
            TORCH_CHECK(t.device().index() == heap_index_, "shmem backend: ", call,
                        ": a tensor on ", t.device(),
                        ", but the symmetric heap is on cuda:", heap_index_,
                        " (tensors must be on the heap's GPU)");
        } else {
            TORCH_CHECK(t.device().is_cpu(), "shmem backend: ", call, ": tensors must be on the ",
                        heap_ == SHMEMX_HEAP_CUDA ? "CPU or on cuda:" + std::to_string(heap_index_)
                                                  : std::string("CPU"),
                        ", got one on ", t.device());
        }
        TORCH_CHECK(t.layout() == at::kStrided, "shmem backend: ", call,
                    ": only dense tensors are supported, got ", t.layout());
    }

    static void check_same_dtype(const char *call, const at::Tensor &a, const at::Tensor &b) {
        TORCH_CHECK(a.scalar_type() == b.scalar_type(), "shmem backend: ", call,
                    ": the output's dtype ", a.scalar_type(), " differs from the input's ",
                    b.scalar_type());
    }

    void check_list(const char *call, const char *name, const std::vector<at::Tensor> &list,
                    const at::Tensor &like) {
        TORCH_CHECK(static_cast<int>(list.size()) == getSize(), "shmem backend: ", call, ": ", name,
                    " has ", list.size(), " tensors, not the group's ", getSize());
        for (const auto &t : list) {
            check_tensor(call, t);
            check_same_dtype(call, t, like);
            TORCH_CHECK(t.numel() == like.numel(), "shmem backend: ", call, ": a tensor of ", name,
                        " has ", t.numel(), " elements, not ", like.numel());
        }
    }

    void check_root(const char *call, int64_t root) const {
        TORCH_CHECK(root >= 0 && root < getSize(), "shmem backend: ", call, ": root rank ", root,
                    " is outside [0, ", getSize() - 1, "]");
    }

    void check_peer(const char *call, const char *name, int peer) const {
        TORCH_CHECK(peer >= 0 && peer < getSize(), "shmem backend: ", call, ": ", name, " ", peer,
                    " is outside [0, ", getSize() - 1, "]");
    }

    static void check_rc(const char *call, int rc) {
        TORCH_CHECK(rc == 0, "shmem backend: ", call, ": the library's collective returned ", rc);
    }

    static std::vector<at::Tensor> flatten_all(const std::vector<at::Tensor> &list) {
        std::vector<at::Tensor> flat;
        for (const auto &t : list) flat.push_back(t.reshape({-1}));
        return flat;
    }

    WorkPtr done(OpType type, std::vector<at::Tensor> outputs) {
        return c10::make_intrusive<DoneWork>(getRank(), type, std::move(outputs));
    }

    // The data scratch, at least `bytes` long. Collective: every rank asks for the same size at
    // the same point (true of every collective here); growing frees and reallocates.
    char *scratch(const char *call, size_t bytes) {
        if (fixed_) {
            TORCH_CHECK(bytes <= data_bytes_, "shmem backend: ", call, ": ", bytes,
                        " bytes of scratch, the group's holds ", data_bytes_);
            return data_;
        }
        grow(call, data_, data_bytes_, bytes);
        return data_;
    }

    // The exchanges' staging area: two halves used in turn, so that a call's puts never land
    // where a rank may still read the call before (every rank has passed the barrier of the call
    // in between, which it reaches after its reads): one barrier per exchange, after the puts.
    // The same sequence of calls on every rank picks the same half.
    char *staging(const char *call, size_t bytes) {
        if (fixed_) {
            TORCH_CHECK(bytes <= staging_bytes_ / 2, "shmem backend: ", call, ": ", bytes,
                        " bytes of staging, the group's holds ", staging_bytes_ / 2);
        } else if (grow(call, staging_, staging_bytes_, 2 * ((bytes + 4095) & ~size_t{4095}))) {
            staging_turn_ = 0;
        }
        char *buf = staging_ + staging_turn_ * (staging_bytes_ / 2);
        staging_turn_ ^= 1;
        return buf;
    }

    // Grows `area` (a collective shmem_malloc, so at the same point on every rank) to at least
    // `bytes`, rounded to 8 KiB; returns whether it moved.
    static bool grow(const char *call, char *&area, size_t &have, size_t bytes) {
        if (bytes <= have) return false;
        size_t want = std::max<size_t>(bytes, std::max<size_t>(2 * have, 1 << 20));
        want = (want + 8191) & ~size_t{8191};
        if (area != nullptr) shmem_free(area);
        area = static_cast<char *>(shmem_malloc(want));
        if (area == nullptr) {
            // Ask for no more than needed before giving up.
            want = (bytes + 8191) & ~size_t{8191};
            area = static_cast<char *>(shmem_malloc(want));
        }
        have = area == nullptr ? 0 : want;
        TORCH_CHECK(area != nullptr, "shmem backend: ", call, ": the symmetric heap has no room ",
                    "for ", bytes, " bytes of scratch (raise SHMEM_SYMMETRIC_SIZE)");
        return true;
    }

    // Every rank's `in` (bytes each), gathered in rank order into the scratch, or into `hold`
    // when the group's scratch takes it in pieces; returns where.
    char *gather_all(const char *call, const at::Tensor &in, size_t bytes, at::Tensor &hold) {
        const size_t n = static_cast<size_t>(getSize());
        const size_t step = step_of(bytes, 1, n + 1);
        if (step == bytes) {
            char *src = scratch(call, bytes * (n + 1));
            char *dst = src + bytes;
            if (bytes > 0) {
                at::Tensor c = in.contiguous();
                copy(src, c.data_ptr(), bytes);
                check_rc(call, shmem_fcollectmem(team_, dst, src, bytes));
            }
            return dst;
        }
        hold = at::empty({static_cast<int64_t>(n * bytes)}, at::kByte);
        char *all = static_cast<char *>(hold.data_ptr());
        const at::Tensor c = in.contiguous();
        const char *mine = static_cast<const char *>(c.data_ptr());
        for (size_t at = 0; at < bytes; at += step) {
            const size_t len = std::min(step, bytes - at);
            char *src = scratch(call, step * (n + 1));
            char *dst = src + step;
            copy(src, mine + at, len);
            check_rc(call, shmem_fcollectmem(team_, dst, src, len));
            for (size_t i = 0; i < n; ++i) copy(all + i * bytes + at, dst + i * len, len);
        }
        return all;
    }

    // `t` (whose contiguous form is `c`) gets the bytes at `from`.
    void copy_out(const at::Tensor &t, at::Tensor &c, const char *from) const {
        copy(c.data_ptr(), from, c.nbytes());
        if (!c.is_same(t)) const_cast<at::Tensor &>(t).copy_(c);
    }

    // `t` flattened and contiguous in the dtype the library reduces (complex as pairs of reals):
    // `t`'s own memory where it already is that.
    static at::Tensor reduce_input(const at::Tensor &t, const ReducePlan &plan) {
        at::Tensor work = at::isComplexType(t.scalar_type())
                              ? at::view_as_real(t.contiguous()).reshape({-1})
                              : t.reshape({-1});
        if (work.scalar_type() != plan.work) work = work.to(plan.work);
        return work.contiguous();
    }

    // Reduces `work` over the group through the scratch, `step` bytes (whole elements) at a
    // time, handing each reduced piece to `take(offset, piece, bytes)`.
    template <typename Take>
    void reduce_pieces(const char *call, const ReducePlan &plan, const at::Tensor &work,
                       size_t step, Take take) {
        const size_t bytes = work.nbytes(), unit = work.element_size();
        const char *from = static_cast<const char *>(work.data_ptr());
        for (size_t at = 0; at < bytes; at += step) {
            const size_t len = std::min(step, bytes - at);
            char *buf = scratch(call, step);
            copy(buf, from + at, len);
            check_rc(call, reduce_call(team_, plan.work, plan.op, buf, len / unit));
            take(at, buf, len);
        }
    }

    // Whether `mine` holds on every rank of the group (a MIN over it through the scratch).
    // Collective: every rank asks at the same point.
    bool every_rank(const char *call, bool mine) {
        auto *word = reinterpret_cast<int32_t *>(scratch(call, sizeof(int32_t)));
        int32_t all = mine ? 1 : 0;
        copy(word, &all, sizeof all);
        check_rc(call, reduce_call(team_, at::kInt, ReduceOp::MIN, word, 1));
        copy(&all, word, sizeof all);
        return all != 0;
    }

    // Bytes a reduction of `bytes` stages at once: kReduceChunk where every rank of the group can
    // run on a CPU of its own (the node's CPUs, the fewest any rank sees, are at least the
    // group's ranks), else all of them, as each piece costs the library's reduction two
    // barriers, and a barrier waits for a rank to be scheduled where ranks share CPUs. Every
    // rank learns the answer at its group's first reduction larger than a piece (a MIN over the
    // group, so all take the same steps).
    size_t reduce_step(const char *call, size_t bytes) {
        if (bytes <= kReduceChunk) return bytes;
        if (reduce_step_ == 0) {
            const bool fits =
                std::thread::hardware_concurrency() >= static_cast<unsigned>(getSize());
            reduce_step_ = every_rank(call, fits) ? kReduceChunk : SIZE_MAX;
        }
        return reduce_step_;
    }

    // Whether ranks of the group share CPUs (reduce_step()'s answer; collective the first time).
    bool shares_cpus(const char *call) {
        reduce_step(call, SIZE_MAX);
        return reduce_step_ != kReduceChunk;
    }

    // Reduces `t` over the group with `op`, into `t` on every rank (root < 0) or on `root`.
    void reduce_all(const char *call, const at::Tensor &t, const ReduceOp &op, int root) {
        const ReducePlan plan = plan_reduce(call, t.scalar_type(), op.op_);
        at::Tensor work = reduce_input(t, plan);
        if (plan.premul) work = premultiplied(call, work, t, op);
        // `work` is `t`'s own memory (a contiguous tensor of a type the library reduces): the
        // result goes straight back into it.
        const bool in_t = work.data_ptr() == t.data_ptr();
        const size_t bytes = work.nbytes();
        const size_t slice = bytes / getSize();
        if (bytes > 0 && root < 0 && direct_.use(slice) && [&] {
                const Collective lock(*this, call);
                return direct_.use_for_all_reduce(bytes, slice, shares_cpus(call));
            }()) {
            // `work` is this rank's own (`t`, or a copy made above): reduced in place.
            const Collective lock(*this, call);
            direct_reduce_all(call, plan, work);
        } else if (bytes > 0 && root < 0 && [&] {
                       const Collective lock(*this, call);
                       return mapped_reduce_fits(call, bytes) &&
                              mapped_reduce_all(call, plan, work);
                   }()) {
            // `work` reduced in place (where some rank maps not every other's memory, nothing
            // moved and the call goes on below).
        } else if (bytes > 0) {
            const Collective lock(*this, call);
            const bool keep = root < 0 || root == getRank();
            const size_t unit = work.element_size();
            const size_t step = std::min(step_of(bytes, unit, 1), reduce_step(call, bytes));
            // The scratch may be reused by the next collective once this returns: copy out.
            at::Tensor result = in_t || !keep ? work : at::empty_like(work);
            char *to = static_cast<char *>(result.data_ptr());
            reduce_pieces(call, plan, work, step, [&](size_t at, const char *piece, size_t len) {
                if (keep) copy(to + at, piece, len);
            });
            if (!keep) return;
            work = result;
        } else if (root >= 0 && root != getRank()) {
            return;
        }
        if (plan.divide) work.div_(getSize());
        if (in_t) return;
        at::Tensor &dest = const_cast<at::Tensor &>(t);
        if (at::isComplexType(t.scalar_type())) {
            dest.copy_(at::view_as_complex(work.view({-1, 2})).view(t.sizes()));
        } else {
            dest.copy_(work.view(t.sizes()));
        }
    }

    // Reduces `in` over the group with `op` in the scratch and copies this rank's slice (the
    // out.numel() elements from rank * out.numel()) into `out`: reduce_scatter.
    void reduce_slice(const char *call, const at::Tensor &in, const at::Tensor &out,
                      const ReduceOp &op) {
        const ReducePlan plan = plan_reduce(call, in.scalar_type(), op.op_);
        const bool complex = at::isComplexType(in.scalar_type());
        at::Tensor work = reduce_input(in, plan);
        if (plan.premul) work = premultiplied(call, work, in, op);
        const int64_t per = complex ? 2 : 1;  // reals per element
        const int64_t count = out.numel() * per;
        const size_t bytes = work.nbytes();
        if (bytes == 0) return;
        const Collective lock(*this, call);
        const size_t unit = work.element_size();
        const size_t step = step_of(bytes, unit, 1);
        const size_t first = getRank() * count * unit, last = first + count * unit;
        at::Tensor mine;
        if (direct_.use(last - first)) {
            // This rank's slice of its own input, reduced with its peers' slices read direct;
            // the barrier keeps every input as it is until the last reader is done.
            const int64_t *addrs = publish(call, {address(work.data_ptr())});
            mine = at::empty({count}, work.options());
            char *to = static_cast<char *>(mine.data_ptr());
            std::memcpy(to, static_cast<const char *>(work.data_ptr()) + first, last - first);
            reduce_from_peers(call, plan, addrs, first, last - first, to);
            sync();
        } else if (step == bytes) {
            char *buf = scratch(call, bytes);
            copy(buf, work.data_ptr(), bytes);
            check_rc(call, reduce_call(team_, plan.work, plan.op, buf, work.numel()));
            if (!plan.divide && !complex && out.is_contiguous() && out.scalar_type() == plan.work) {
                // This rank's slice is out's bytes as they are: straight into it.
                copy(out.data_ptr(), buf + first, last - first);
                return;
            }
            if (heap_ == SHMEMX_HEAP_HOST) {
                mine = at::from_blob(buf + first, {count}, work.options());
            } else {
                mine = at::empty({count}, work.options());
                copy(mine.data_ptr(), buf + first, last - first);
            }
        } else {
            // In pieces: every piece is reduced, this rank keeps the part in its slice.
            mine = at::empty({count}, work.options());
            char *to = static_cast<char *>(mine.data_ptr());
            reduce_pieces(call, plan, work, step, [&](size_t at, const char *piece, size_t len) {
                const size_t lo = std::max(at, first), hi = std::min(at + len, last);
                if (lo < hi) copy(to + (lo - first), piece + (lo - at), hi - lo);
            });
        }
        if (plan.divide) mine = mine / getSize();
        if (complex) mine = at::view_as_complex(mine.view({-1, 2}));
        // Copied (and converted back to out's dtype) before the scratch is released.
        const_cast<at::Tensor &>(out).copy_(mine.view(out.sizes()));
    }

    // Every rank sends send[j] to rank j, which receives it into its recv[i] (sizes must agree).
    // The sizes go round first (one fcollect) and are checked on every rank, then transfer(),
    // or direct_transfer() where the largest block goes direct: the same fcollect carries each
    // rank's blocks' addresses, and whether its send and receive blocks are apart.
    void exchange(const char *call, const std::vector<Block> &send,
                  const std::vector<Block> &recv) {
        const int n = getSize();
        const size_t w = meta_bytes_ / sizeof(int64_t);  // per rank: 3n + 1
        std::vector<int64_t> mine(w), all(w * n);
        bool apart = true;
        for (int j = 0; j < n; ++j) {
            mine[j] = send[j].bytes;
            mine[n + j] = recv[j].bytes;
            mine[2 * n + j] = address(send[j].data);
            for (int k = 0; k < n; ++k) apart = apart && !overlap(send[j], recv[k]);
        }
        mine[3 * n] = apart ? 1 : 0;
        copy(meta_, mine.data(), meta_bytes_);
        check_rc(call, shmem_fcollectmem(team_, meta_ + w, meta_, meta_bytes_));
        copy(all.data(), meta_ + w, meta_bytes_ * n);
        const auto expected = [&](int i, int j) { return all[i * w + n + j]; };
        std::vector<int64_t> sent(static_cast<size_t>(n) * n);
        int64_t most = 0;
        for (int i = 0; i < n; ++i) {
            apart = apart && all[i * w + 3 * n] != 0;
            for (int j = 0; j < n; ++j) {
                sent[i * n + j] = all[i * w + j];
                if (i != j) most = std::max(most, sent[i * n + j]);
            }
        }
        // Every rank checks every pair, so all raise the same error together.
        for (int i = 0; i < n; ++i)
            for (int j = 0; j < n; ++j)
                TORCH_CHECK(sent[i * n + j] == expected(j, i), "shmem backend: ", call, ": rank ",
                            i, " sends ", sent[i * n + j], " bytes to rank ", j, ", which expects ",
                            expected(j, i), " from it");
        if (apart && direct_.use(static_cast<size_t>(most))) {
            // Rank i's block for this rank is at its published address for it.
            std::vector<uint64_t> from(n);
            for (int i = 0; i < n; ++i)
                from[i] = static_cast<uint64_t>(all[i * w + 2 * n + getRank()]);
            direct_transfer(call, from, send, recv);
            return;
        }
        // The sizes area is read: nobody gathers into it again before every rank is past it
        // (transfer's barrier, or this one where nothing moves between ranks).
        if (!transfer(call, sent, send, recv)) sync();
    }

    // The direct path's part (see DirectPath) ------------------------------------------------

    static int64_t address(const void *p) {
        return static_cast<int64_t>(reinterpret_cast<uintptr_t>(p));
    }

    static bool overlap(const Block &a, const Block &b) {
        return a.bytes > 0 && b.bytes > 0 && a.data < b.data + b.bytes && b.data < a.data + a.bytes;
    }

    // Every rank's `words` words (this rank's `mine`) gathered in rank order through the sizes
    // area, read before the call's next barrier.
    const int64_t *publish(const char *call, std::initializer_list<int64_t> mine) {
        const size_t w = meta_bytes_ / sizeof(int64_t);
        std::copy(mine.begin(), mine.end(), meta_);
        check_rc(call, shmem_fcollectmem(team_, meta_ + w, meta_, mine.size() * sizeof(int64_t)));
        return meta_ + w;
    }

    // Reads recv[i] (for i other than this rank) from rank i's address from[i], copies this
    // rank's own block, and waits for every rank to be done reading (so every block stays as it
    // is until then): an exchange in one copy.
    void direct_transfer(const char *call, const std::vector<uint64_t> &from,
                         const std::vector<Block> &send, const std::vector<Block> &recv) {
        const int n = getSize(), me = getRank();
        // Each rank starts with the next one, so the ranks read different peers at a time.
        for (int k = 1; k < n; ++k) {
            const int i = (me + k) % n;
            if (recv[i].bytes > 0)
                direct_.read(call, i,
                             {{recv[i].data, from[i], static_cast<size_t>(recv[i].bytes)}});
        }
        if (send[me].bytes > 0 && send[me].data != recv[me].data)
            std::memmove(recv[me].data, send[me].data, send[me].bytes);
        sync();
    }

    // The direct path's all-gather: every rank's `in` into this rank's dst[i] (as many bytes
    // each). False, with nothing moved, where a rank's output overlaps its input other than as
    // its own block (in place, all_gather_into_tensor of a slice of its output): the staged
    // path's then.
    bool direct_gather(const char *call, const at::Tensor &in, const std::vector<Block> &dst) {
        const int n = getSize(), me = getRank();
        const Block mine = block(in);
        bool apart = true;
        for (int i = 0; i < n; ++i)
            apart = apart && (i == me ? dst[i].data == mine.data || !overlap(dst[i], mine)
                                      : !overlap(dst[i], mine));
        const int64_t *all = publish(call, {address(mine.data), apart ? 1 : 0});
        for (int i = 0; i < n; ++i)
            if (all[2 * i + 1] == 0) return false;  // the next collective waits for every reader
        std::vector<uint64_t> from(n);
        std::vector<Block> send(n);
        for (int i = 0; i < n; ++i) from[i] = static_cast<uint64_t>(all[2 * i]);
        send[me] = mine;
        direct_transfer(call, from, send, dst);
        return true;
    }

    // `bytes` at `acc` (this rank's own, in place) reduced with `op` with the same bytes of every
    // other rank, `offset` bytes from the address it published (addrs[rank]): a piece of every
    // peer's read into this rank's buffer, then combined block by block, each block of `acc`
    // taking every peer's in turn (from the next rank on, as before) while it is in the core's
    // first-level cache, so `acc` is read and written once per piece. With `to_peers`, each
    // combined piece is then written to every peer at the place it was read from, while it is
    // still in the caches.
    void reduce_from_peers(const char *call, const ReducePlan &plan, const int64_t *addrs,
                           size_t offset, size_t bytes, char *acc, bool to_peers = false) {
        const int n = getSize(), me = getRank();
        const size_t unit = c10::elementSize(plan.work);
        const size_t piece = DirectPath::piece_bytes(n - 1);
        char *tmp = direct_.pieces(n - 1);
        constexpr size_t kBlock = size_t{8} << 10;  // a multiple of every element size
        for (size_t at = 0; at < bytes; at += piece) {
            const size_t len = std::min(piece, bytes - at);
            for (int k = 1; k < n; ++k) {
                const int i = (me + k) % n;
                direct_.read(
                    call, i,
                    {{tmp + (k - 1) * piece, static_cast<uint64_t>(addrs[i]) + offset + at, len}});
            }
            for (size_t b = 0; b < len; b += kBlock) {
                const size_t count = std::min(kBlock, len - b) / unit;
                for (int k = 1; k < n; ++k)
                    combine(plan.work, plan.op, acc + at + b, tmp + (k - 1) * piece + b, count);
            }
            if (to_peers)
                for (int k = 1; k < n; ++k) {
                    const int i = (me + k) % n;
                    direct_.write(call, i,
                                  {{acc + at, static_cast<uint64_t>(addrs[i]) + offset + at, len}});
                }
        }
    }

    // all_reduce in one copy each way: every rank reduces its slice of `work` (its own, in
    // place) with its peers' slices, read from their tensors a piece at a time, and writes each
    // reduced piece into every peer's tensor at the same place; then one barrier, after which
    // every tensor holds every slice. Rank r reads and writes only slice r of any tensor, and
    // writes a peer's slice r only after it has read it, so no rank reads a byte another wrote.
    void direct_reduce_all(const char *call, const ReducePlan &plan, const at::Tensor &work) {
        const int n = getSize(), me = getRank();
        const size_t unit = work.element_size(), count = work.numel();
        char *base = static_cast<char *>(work.data_ptr());
        const int64_t *addrs = publish(call, {address(base)});
        // Slices of whole cache lines (the last one shorter, maybe empty).
        const size_t line = std::max<size_t>(64 / unit, 1);
        const size_t per = ((count + n - 1) / n + line - 1) / line * line;
        const auto lo = [&](int r) { return std::min(count, r * per) * unit; };
        const auto len = [&](int r) { return std::min(count, (r + 1) * per) * unit - lo(r); };
        if (len(me) > 0)
            reduce_from_peers(call, plan, addrs, lo(me), len(me), base + lo(me), /*to_peers=*/true);
        sync();
    }

    // Whether an all_reduce of `bytes` takes mapped_reduce_all (the same on every rank): from
    // kMappedMin (below, the library's reduction of a small array costs no more) where every
    // rank of the group runs on a CPU of its own (see reduce_step(); where ranks share CPUs its
    // barriers, each waiting for a rank to be scheduled, cost more than it saves: 1.5-2 x the
    // library's reduction's time at 3 and 4 ranks on 2 CPUs). Collective the first time.
    bool mapped_reduce_fits(const char *call, size_t bytes) {
        if (getSize() < 2 || bytes < kMappedMin || mapped_ == 0) return false;
        return !shares_cpus(call);
    }

    // all_reduce through a staging half (see staging()) where every rank of the group maps the
    // others' (one node): each rank copies into its half the slices other ranks reduce (not
    // its own), a barrier; it reduces its slice, block by block in the cache, from its own
    // tensor and the other ranks' halves read where they are mapped, in rank order, into its
    // tensor and its half; a barrier; then it copies every other slice out of the half of the
    // rank that reduced it. (n-1)/n of the tensor is copied in and out, where the library's
    // reduction over the scratch copies all of it in and out and writes every slice to every
    // rank. The next call that stages writes the other half, and the one after waits at that
    // call's barrier for every reader of this one. False, with nothing moved, where some rank
    // does not map every other's memory (learnt once, the same on every rank).
    bool mapped_reduce_all(const char *call, const ReducePlan &plan, const at::Tensor &work) {
        const int n = getSize(), me = getRank();
        if (mapped_ < 0) {
            const char *probe = scratch(call, sizeof(int32_t));  // any symmetric address
            bool mine = true;
            for (int j = 0; j < n; ++j)
                if (j != me && shmem_ptr(probe, pe(j)) == nullptr) mine = false;
            mapped_ = every_rank(call, mine) ? 1 : 0;
        }
        if (mapped_ == 0) return false;
        const size_t bytes = work.nbytes(), unit = work.element_size();
        size_t step = std::min(bytes, reduce_step(call, bytes));
        if (fixed_) step = std::min(step, (staging_bytes_ / 2) / unit * unit);
        char *base = static_cast<char *>(work.data_ptr());
        for (size_t at = 0; at < bytes; at += step)
            mapped_reduce_piece(call, plan, base + at, std::min(step, bytes - at) / unit, unit);
        return true;
    }

    // One piece of mapped_reduce_all: `count` elements of `unit` bytes at `base`.
    void mapped_reduce_piece(const char *call, const ReducePlan &plan, char *base, size_t count,
                             size_t unit) {
        const int n = getSize(), me = getRank();
        char *half = staging(call, count * unit);
        if (peers_of_ != staging_) {  // where each rank's staging is mapped here
            peers_at_.assign(n, nullptr);
            for (int j = 0; j < n; ++j)
                peers_at_[j] = j == me ? staging_ : static_cast<char *>(shmem_ptr(staging_, pe(j)));
            peers_of_ = staging_;
        }
        const size_t shift = static_cast<size_t>(half - staging_);
        // Slices of whole cache lines (the last one shorter, maybe empty).
        const size_t line = std::max<size_t>(64 / unit, 1);
        const size_t per = ((count + n - 1) / n + line - 1) / line * line;
        const auto lo = [&](int r) { return std::min(count, r * per) * unit; };
        const auto len = [&](int r) { return std::min(count, (r + 1) * per) * unit - lo(r); };
        for (int j = 0; j < n; ++j)
            if (j != me && len(j) > 0) std::memcpy(half + lo(j), base + lo(j), len(j));
        sync();
        alignas(64) char acc[kMappedBlock];
        for (size_t off = lo(me), end = lo(me) + len(me); off < end; off += kMappedBlock) {
            const size_t b = std::min(kMappedBlock, end - off);
            const auto src = [&](int r) { return (r == me ? base : peers_at_[r] + shift) + off; };
            combine_into(plan.work, plan.op, acc, src(0), src(1), b / unit);
            for (int r = 2; r < n; ++r) combine(plan.work, plan.op, acc, src(r), b / unit);
            std::memcpy(base + off, acc, b);
            std::memcpy(half + off, acc, b);
        }
        sync();
        for (int k = 1; k < n; ++k) {
            const int j = (me + k) % n;
            if (len(j) > 0) std::memcpy(base + lo(j), peers_at_[j] + shift + lo(j), len(j));
        }
    }

    // The exchange itself, with `sent` (n x n, row i: the bytes rank i sends to each rank) alike
    // on every rank, as this rank's send/recv blocks: each block is put into its receiver's
    // staging half at the offset every rank computes alike, one barrier completes them, and each
    // rank copies its blocks out. Returns whether it synchronised (not when nothing moves).
    bool transfer(const char *call, const std::vector<int64_t> &sent,
                  const std::vector<Block> &send, const std::vector<Block> &recv) {
        const int n = getSize();
        const int me = getRank();
        // Offsets in each receiver's area (blocks from other ranks, in rank order).
        size_t area = 0;
        std::vector<int64_t> offset(n, 0);  // where my block lands at rank j
        for (int j = 0; j < n; ++j) {
            int64_t total = 0;
            for (int i = 0; i < n; ++i) {
                if (i == j) continue;
                if (i == me) offset[j] = total;
                total += sent[i * n + j];
            }
            area = std::max(area, static_cast<size_t>(total));
        }
        settle();  // the puts below read the tensors
        if (send[me].bytes > 0) copy(recv[me].data, send[me].data, send[me].bytes);
        if (area == 0) return false;
        if (fixed_ && area > staging_bytes_ / 2) {
            transfer_rounds(call, sent, send, recv);
            return true;
        }
        char *buf = staging(call, area);
        for (int j = 0; j < n; ++j) {
            if (j == me || send[j].bytes == 0) continue;
            shmem_putmem(buf + offset[j], send[j].data, send[j].bytes, pe(j));
        }
        sync();
        int64_t at = 0;
        for (int i = 0; i < n; ++i) {
            if (i == me) continue;
            if (recv[i].bytes > 0) copy(recv[i].data, buf + at, recv[i].bytes);
            at += sent[i * n + me];
        }
        return true;
    }

    // transfer() through a group's staging halves when they cannot hold a call's blocks at
    // once: in rounds, each moving the next piece of every block (at most a half's share per
    // sender) into the receiver's half at the sender's place, then one barrier.
    void transfer_rounds(const char *call, const std::vector<int64_t> &sent,
                         const std::vector<Block> &send, const std::vector<Block> &recv) {
        const int n = getSize();
        const int me = getRank();
        const size_t share = (staging_bytes_ / 2 / static_cast<size_t>(n)) & ~size_t{63};
        TORCH_CHECK(share > 0, "shmem backend: ", call, ": the group's staging of ", staging_bytes_,
                    " bytes is too small for ", n, " ranks: raise ", "SHMEM_TORCH_GROUP_SCRATCH");
        int64_t most = 0;
        for (int i = 0; i < n; ++i)
            for (int j = 0; j < n; ++j)
                if (i != j) most = std::max(most, sent[i * n + j]);
        for (int64_t at = 0; at < most; at += static_cast<int64_t>(share)) {
            char *buf = staging(call, share * n);
            for (int j = 0; j < n; ++j) {
                const int64_t len = std::min<int64_t>(share, send[j].bytes - at);
                if (j == me || len <= 0) continue;
                shmem_putmem(buf + static_cast<size_t>(me) * share, send[j].data + at, len, pe(j));
            }
            sync();
            for (int i = 0; i < n; ++i) {
                const int64_t len = std::min<int64_t>(share, recv[i].bytes - at);
                if (i == me || len <= 0) continue;
                copy(recv[i].data + at, buf + static_cast<size_t>(i) * share, len);
            }
        }
    }

    struct MailHeader {
        int64_t tag;
        int64_t bytes;  // the whole message's
    };

    char *mailbox(int from) const { return mail_ + from * (kMailHeader + mail_chunk_); }

    // Puts one message into `dst`'s mailbox for this rank, chunk by chunk, each once `dst` has
    // taken the one before.
    void put_message(int dst, int tag, const char *data, size_t bytes,
                     std::chrono::steady_clock::time_point deadline) {
        const int me = getRank();
        const MailHeader header{tag, static_cast<int64_t>(bytes)};
        size_t at = 0;
        do {
            const uint64_t chunk = chunks_sent_[dst];
            auto pause = std::chrono::microseconds(1);
            while (shmem_signal_fetch(&mail_ack_[dst]) < chunk) {
                {
                    // Take what has come meanwhile, so two ranks sending to each other before
                    // either receives both go on.
                    std::lock_guard<std::mutex> lock(p2p_mutex_);
                    for (int src = 0; src < getSize(); ++src) take_progress(src);
                }
                TORCH_CHECK(std::chrono::steady_clock::now() < deadline, "shmem backend: send ",
                            "to rank ", dst, " (tag ", tag, ", ", bytes, " bytes): rank ", dst,
                            " took nothing within the group's timeout of ",
                            options_->timeout.count(), " ms");
                pause = backoff(pause);
            }
            const size_t len = std::min(mail_chunk_, bytes - at);
            shmem_putmem(mailbox(me), &header, sizeof header, pe(dst));
            shmem_fence();
            shmem_putmem_signal(mailbox(me) + kMailHeader, data + at, len, &mail_sig_[me],
                                chunk + 1, SHMEM_SIGNAL_SET, pe(dst));
            chunks_sent_[dst] = chunk + 1;
            at += len;
        } while (at < bytes);
    }

    void finish_send(int dst) {
        {
            std::lock_guard<std::mutex> lock(p2p_mutex_);
            ++send_served_[dst];
        }
        send_cv_.notify_all();
    }

    // Takes every chunk that has come from `src` (under p2p_mutex_): whole messages go to
    // stash_[src], in the order sent; `src` may put the next chunk once this one is taken.
    void take_progress(int src) {
        const int me = getRank();
        while (shmem_signal_fetch(&mail_sig_[src]) > chunks_taken_[src]) {
            MailHeader header;
            copy(&header, mailbox(src), sizeof header);
            Partial &p = partial_[src];
            if (!p.open) {
                p.open = true;
                p.tag = static_cast<int>(header.tag);
                p.bytes.assign(static_cast<size_t>(header.bytes), 0);
                p.got = 0;
            }
            const size_t len = std::min(mail_chunk_, p.bytes.size() - p.got);
            if (len > 0) copy(p.bytes.data() + p.got, mailbox(src) + kMailHeader, len);
            p.got += len;
            ++chunks_taken_[src];
            ++taken_total_;
            shmem_uint64_atomic_set(&mail_ack_[me], chunks_taken_[src], pe(src));
            if (p.got == p.bytes.size()) {
                stash_[src].push_back({p.tag, std::move(p.bytes)});
                p = Partial{};
            }
        }
    }

    // Moves the turn of `key`'s recvs (sender, tag) past the recvs that gave up (under
    // p2p_mutex_).
    void pass_abandoned(const std::pair<int, int> &key) {
        auto it = abandoned_.find(key);
        if (it == abandoned_.end()) return;
        int64_t &taken = recv_taken_[key];
        while (!it->second.empty() && *it->second.begin() == taken) {
            it->second.erase(it->second.begin());
            ++taken;
        }
    }

    // The first whole message of `tag` from `src` into `bytes` (under p2p_mutex_).
    bool take(int src, int tag, std::vector<char> &bytes) {
        auto &queue = stash_[src];
        for (auto it = queue.begin(); it != queue.end(); ++it) {
            if (it->first != tag) continue;
            bytes = std::move(it->second);
            queue.erase(it);
            return true;
        }
        return false;
    }

    // Calls `ready` under p2p_mutex_ until it says true, pausing between tries, within the
    // group's timeout.
    template <typename Ready>
    void await(const std::string &what, int tag, Ready ready) {
        const auto deadline = std::chrono::steady_clock::now() + options_->timeout;
        auto pause = std::chrono::microseconds(1);
        uint64_t seen = 0;
        for (;;) {
            bool moved;
            {
                std::lock_guard<std::mutex> lock(p2p_mutex_);
                if (ready()) return;
                // a chunk came: the next is likely close behind, so no long sleep
                moved = taken_total_ != seen;
                seen = taken_total_;
            }
            if (moved) pause = std::chrono::microseconds(1);
            TORCH_CHECK(std::chrono::steady_clock::now() < deadline, "shmem backend: ", what,
                        " (tag ", tag, "): a message did not come within the group's timeout of ",
                        options_->timeout.count(), " ms");
            pause = backoff(pause);
        }
    }

    // Yields for the first tries, then sleeps, twice as long each time up to a millisecond.
    static std::chrono::microseconds backoff(std::chrono::microseconds pause) {
        if (pause < std::chrono::microseconds(64)) {
            std::this_thread::yield();
        } else {
            std::this_thread::sleep_for(pause);
        }
        return std::min(pause * 2, std::chrono::microseconds(1000));
    }

    void deliver(const at::Tensor &t, const std::vector<char> &bytes, int src) {
        TORCH_CHECK(bytes.size() == t.nbytes(), "shmem backend: recv: rank ", src, " sent ",
                    bytes.size(), " bytes, the receiving tensor holds ", t.nbytes());
        at::Tensor c = t.contiguous();
        copy_out(t, c, bytes.data());
    }

    // One collective at a time on the scratch, under the watchdog.
    class Collective {
    public:
        Collective(ShmemBackend &b, const char *call) : lock_(b.mutex_), watchdog_(b.watchdog_) {
            watchdog_.arm(call, b.options_->timeout);
        }
        ~Collective() { watchdog_.disarm(); }

    private:
        std::lock_guard<std::mutex> lock_;
        Watchdog &watchdog_;
    };

    c10::intrusive_ptr<Options> options_;
    std::mutex mutex_;  // one collective at a time on the scratch (Collective)
    Watchdog watchdog_;
    shmem_team_t team_ = SHMEM_TEAM_INVALID;  // the group's team
    int heap_ = SHMEMX_HEAP_HOST;             // where the heap is (shmemx_heap_device)
    int heap_index_ = -1;                     // the heap's GPU (SHMEMX_HEAP_CUDA)
    std::vector<int> members_;                // world PE of each group rank
    uint64_t made_ = 0;   // groups of these ranks this process made before this one
    bool fixed_ = false;  // the scratch is a region of the groups' arena: it never grows
    int64_t *meta_ = nullptr;
    size_t meta_bytes_ = 0;
    char *data_ = nullptr;
    size_t data_bytes_ = 0;
    char *staging_ = nullptr;
    size_t staging_bytes_ = 0;
    int staging_turn_ = 0;
    DirectPath direct_;  // single-copy collectives between the ranks of this node
    // Bytes a reduction stages at once (whole cache lines, so whole elements of every type): a
    // piece small enough that every member's piece stays in the last-level cache between its
    // copy in, the library's reduction (which reads every member's piece) and its copy out.
    static constexpr size_t kReduceChunk = size_t{1} << 20;
    size_t reduce_step_ = 0;  // reduce_step()'s, once known (0 before)
    // mapped_reduce_all's sizes and block, and whether every rank maps every other's memory
    // (-1 before its first call).
    static constexpr size_t kMappedMin = size_t{512} << 10;
    static constexpr size_t kMappedBlock = size_t{16} << 10;
    int mapped_ = -1;
    std::vector<char *> peers_at_;  // every rank's staging_ where it is mapped here
    char *peers_of_ = nullptr;      // the staging_ peers_at_ was made for
    // Point to point (see the top).
    static constexpr size_t kMailHeader = 64;
    static constexpr size_t kMailChunk = (size_t{256} << 10) - kMailHeader;
    size_t mail_chunk_ = kMailChunk;  // a group's region holds smaller mailboxes
    struct Partial {
        bool open = false;
        int tag = 0;
        std::vector<char> bytes;
        size_t got = 0;
    };
    char *mail_ = nullptr;          // n mailboxes, then the signals and acknowledgements
    uint64_t *mail_sig_ = nullptr;  // [i]: chunks rank i has put into my mailbox for it
    uint64_t *mail_ack_ = nullptr;  // [j]: chunks rank j has taken out of its mailbox for me
    std::mutex p2p_mutex_;          // everything below
    std::condition_variable send_cv_;
    std::vector<uint64_t> chunks_sent_, chunks_taken_;
    uint64_t taken_total_ = 0;  // chunks taken from every sender
    std::vector<Partial> partial_;
    std::vector<std::deque<std::pair<int, std::vector<char>>>> stash_;
    std::vector<int64_t> send_posted_, send_served_;
    std::map<std::pair<int, int>, int64_t> recv_posted_, recv_taken_;
    std::map<std::pair<int, int>, std::set<int64_t>> abandoned_;  // recvs that timed out
};

c10::intrusive_ptr<c10d::Backend> create(const c10::intrusive_ptr<c10d::Store> &store, int rank,
                                         int size, std::chrono::milliseconds timeout,
                                         std::vector<int> ranks, int world) {
    return c10::make_intrusive<ShmemBackend>(store, rank, size, timeout, std::move(ranks), world);
}

}  // namespace
}  // namespace shmem_torch

PYBIND11_MODULE(_c10d, m) {
    m.doc() = "The torch.distributed backend \"shmem\" (registered by import shmem_torch)";
    m.def(
        "create_backend",
        [](const c10::intrusive_ptr<c10d::Store> &store, int rank, int size,
           std::chrono::milliseconds timeout, std::vector<int> ranks, int world) {
            return shmem_torch::create(store, rank, size, timeout, std::move(ranks), world);
        },
        pybind11::arg("store"), pybind11::arg("rank"), pybind11::arg("size"),
        pybind11::arg("timeout"), pybind11::arg("ranks") = std::vector<int>{},
        pybind11::arg("world") = 0, pybind11::call_guard<pybind11::gil_scoped_release>());
    m.def("n_pes", [] {
        return aclshmemx_init_status() == ACLSHMEM_STATUS_IS_INITIALIZED ? shmem_n_pes() : -1;
    });
}
