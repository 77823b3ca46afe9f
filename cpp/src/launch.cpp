// launch.cpp: the CPU architecture's kernel launch (shmemx_cpu_launch) and the kernel-side
// API's calls into the library (failures, the waiting policy).
//
// Block 0 runs on the caller's thread; blocks 1 .. N-1 run on the launch pool's workers,
// threads started when a launch first needs them and parked between launches (a launch wakes
// them instead of creating threads). Worker i always runs block i + 1. Each block's thread
// gets its block record (shmem/arch/cpu.h) before the kernel runs: the job state, the launch's
// group (the barrier among its blocks), its index and the count. Workers a launch needs are
// all started before any block runs, so a failure to start one leaves no block waiting at a
// barrier for a block that will never come. shmem_finalize joins the workers. Never on the
// data path: the kernel-side routines are header code reading the job state.
#include "internal.h"
#include "team.h"
#include "watch.h"

#include <shmem/arch/cpu.h>
#include <shmem/device.h>
#include <shmem/launch.h>

#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace shmem::detail;

// The calling thread's block record: exported, read by the kernel-side headers.
extern "C" {
__attribute__((visibility("default"))) __thread shmemx_cpu_block shmemx_cpu_block_g = {
    nullptr, nullptr, 0, 0};
}

namespace {

constexpr const char *kLaunch = "shmemx_cpu_launch";

// One launch at a time per process: the kernel-side barrier's words are the PE's, not a
// launch's, so two launches at once would mix their barriers.
std::atomic<bool> launch_running{false};

void run_block(shmemx_cpu_kernel_t kernel, void *args, shmemx_cpu_group *group, int idx, int num) {
    shmemx_cpu_block_g = shmemx_cpu_block{&shmem_job_state_g, group, idx, num};
    kernel(args);
    shmemx_cpu_block_g = shmemx_cpu_block{nullptr, nullptr, 0, 0};
}

// The workers that run blocks 1 .. N-1. Launches are serialised by launch_running, so only the
// launching thread writes the launch's fields; the workers read them after seeing the new
// generation under the mutex.
class Pool {
public:
    // Runs blocks 1 .. blocks-1 of `kernel` on the workers, block 0 here, and returns when all
    // have returned; false (nothing ran) when a needed worker cannot be started.
    bool launch(shmemx_cpu_kernel_t kernel, void *args, shmemx_cpu_group *group, int blocks) {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            if (!grow(blocks - 1)) return false;
            kernel_ = kernel;
            args_ = args;
            group_ = group;
            blocks_ = blocks;
            remaining_.store(blocks - 1, std::memory_order_relaxed);
            ++generation_;
        }
        if (blocks > 1) work_.notify_all();
        run_block(kernel, args, group, 0, blocks);
        shmem_arch_wait wait = SHMEM_ARCH_WAIT_INIT;
        while (remaining_.load(std::memory_order_acquire) != 0) shmem_arch_spin(&wait);
        return true;
    }

    // Joins every worker (none is running a block: launches have returned).
    void stop() {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stopping_ = true;
        }
        work_.notify_all();
        for (auto &t : threads_) t.join();
        threads_.clear();
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = false;
    }

    std::string failure() const { return failure_; }

private:
    // Starts workers until there are `workers`; false (logged by the caller from failure_) when
    // one cannot be started. Called with the mutex held.
    bool grow(int workers) {
        try {
            threads_.reserve(static_cast<size_t>(workers));
            while (static_cast<int>(threads_.size()) < workers) {
                int idx = static_cast<int>(threads_.size()) + 1;
                threads_.emplace_back([this, idx, seen = generation_] { work(idx, seen); });
            }
        } catch (const std::exception &e) {
            failure_ = e.what();
            return false;
        }
        return true;
    }

    // Worker loop of block `idx`: each new generation runs the block when the launch has it.
    void work(int idx, uint64_t seen) {
        for (;;) {
            shmemx_cpu_kernel_t kernel;
            void *args;
            shmemx_cpu_group *group;
            int blocks;
            {
                std::unique_lock<std::mutex> lock(mutex_);
                work_.wait(lock, [&] { return stopping_ || generation_ != seen; });
                if (stopping_) return;
                seen = generation_;
                kernel = kernel_;
                args = args_;
                group = group_;
                blocks = blocks_;
            }
            if (idx < blocks) {
                run_block(kernel, args, group, idx, blocks);
                remaining_.fetch_sub(1, std::memory_order_acq_rel);
            }
        }
    }

    std::mutex mutex_;
    std::condition_variable work_;
    std::vector<std::thread> threads_;
    uint64_t generation_ = 0;
    bool stopping_ = false;
    shmemx_cpu_kernel_t kernel_ = nullptr;
    void *args_ = nullptr;
    shmemx_cpu_group *group_ = nullptr;
    int blocks_ = 0;
    std::atomic<int> remaining_{0};
    std::string failure_;
};

// The process's pool, made at the first launch. Never destroyed at exit (a program may leave
// without shmem_finalize, and joinable threads must not be destroyed); a child of fork, which
// has none of its parent's workers, makes its own.
Pool *pool = nullptr;
pid_t pool_pid = 0;

Pool &the_pool() {
    if (pool == nullptr || pool_pid != getpid()) {
        pool = new Pool;  // a forked child's copy of the parent's pool is left as it is
        pool_pid = getpid();
    }
    return *pool;
}

}  // namespace

namespace shmem::detail {

void launch_stop() {
    if (pool != nullptr && pool_pid == getpid()) pool->stop();
}

}  // namespace shmem::detail

SHMEM_EXPORT int shmemx_cpu_launch(shmemx_cpu_kernel_t kernel, void *args, int blocks) {
    if (lib_phase.load(std::memory_order_acquire) != kRunning) {
        log_call_error(kLaunch, "the library is not running (call shmem_init first)");
        return -1;
    }
    if (kernel == nullptr) {
        log_call_error(kLaunch, "invalid argument kernel=NULL");
        return -1;
    }
    if (blocks < 1 || blocks > SHMEMX_CPU_LAUNCH_MAX_BLOCKS) {
        log_call_error(kLaunch, "invalid argument blocks=%d: not in [1, %d]", blocks,
                       SHMEMX_CPU_LAUNCH_MAX_BLOCKS);
        return -1;
    }
    if (shmemx_cpu_block_g.job != nullptr) {
        log_call_error(kLaunch,
                       "called from inside a kernel (block %d of %d): launches do not nest",
                       shmemx_cpu_block_g.idx, shmemx_cpu_block_g.num);
        return -1;
    }

    if (launch_running.exchange(true, std::memory_order_acquire)) {
        log_call_error(kLaunch,
                       "another thread's launch is running: launches on one PE run one "
                       "at a time");
        return -1;
    }
    struct Done {
        ~Done() { launch_running.store(false, std::memory_order_release); }
    } done;
    auto group = std::make_unique<shmemx_cpu_group>();  // 64-byte aligned: its words own lines
    group->blocks = static_cast<uint32_t>(blocks);
    if (blocks == 1) {
        run_block(kernel, args, group.get(), 0, 1);
        return 0;
    }
    Pool &p = the_pool();
    if (!p.launch(kernel, args, group.get(), blocks)) {
        log_call_error(kLaunch,
                       "blocks=%d: could not start the threads of blocks 1..%d (%s); no "
                       "block ran",
                       blocks, blocks - 1, p.failure().c_str());
        return -1;
    }
    return 0;
}

SHMEM_EXPORT int shmemx_team_kernel_id(const void *team) {
    const shmem_team_s *t = team_find(static_cast<shmem_team_t>(const_cast<void *>(team)));
    // The team table kernels read holds progressions only (team.cpp's publish_team).
    return t == nullptr || t->listed ? -1 : t->slot;
}

SHMEM_EXPORT void shmemx_cpu_kernel_snooze(shmem_arch_wait *wait) {
    shmem::core::WaitState state{wait->spins, wait->yielding_since_ns, wait->nap_ns};
    shmem::core::wait_snooze(state);
    wait->spins = state.spins;
    wait->yielding_since_ns = state.yielding_since_ns;
    wait->nap_ns = state.nap_ns;
}

SHMEM_EXPORT void shmemx_cpu_kernel_abort(const char *call, const char *what) {
    shmemx_cpu_block self = shmemx_cpu_block_g;
    fail(call, "%s (kernel block %d of %d)", what, self.idx, self.num);
}

SHMEM_EXPORT void shmemx_cpu_kernel_fail(const char *call, const char *arg, long long value,
                                         const char *why) {
    shmemx_cpu_block self = shmemx_cpu_block_g;
    fail(call, "invalid argument %s=%lld: %s (kernel block %d of %d)", arg, value, why, self.idx,
         self.num);
}

SHMEM_EXPORT void shmemx_cpu_kernel_fail_addr(const char *call, const char *arg, const void *addr,
                                              const char *why) {
    shmemx_cpu_block self = shmemx_cpu_block_g;
    fail(call, "invalid argument %s=%p: %s (kernel block %d of %d)", arg, addr, why, self.idx,
         self.num);
}
