// launch.cpp: the CPU architecture's kernel launch (shmemx_cpu_launch) and the kernel-side
// API's failure calls.
//
// A launch starts blocks - 1 threads, runs block 0 on the caller's, and joins them. Each
// block's thread gets its block record (shmem/arch/cpu.h) before the kernel runs: the job state,
// the launch's group (the barrier among its blocks), its index and the count. Threads are all
// started before any block runs, so a failure to start one leaves no block waiting at a
// barrier for a block that will never come. Never on the data path: the kernel-side routines
// are header code reading the job state.
#include "internal.h"
#include "team.h"
#include "watch.h"

#include <shmem/arch/cpu.h>
#include <shmem/device.h>
#include <shmem/launch.h>

#include <atomic>
#include <cstring>
#include <exception>
#include <memory>
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

// Start gate of a launch's threads: 0 wait, 1 run, 2 leave without running (a thread failed to
// start).
struct Gate {
    std::atomic<int> state{0};
};

void run_block(shmemx_cpu_kernel_t kernel, void *args, shmemx_cpu_group *group, int idx, int num) {
    shmemx_cpu_block_g = shmemx_cpu_block{&shmem_job_state_g, group, idx, num};
    kernel(args);
    shmemx_cpu_block_g = shmemx_cpu_block{nullptr, nullptr, 0, 0};
}

}  // namespace

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
    Gate gate;
    std::vector<std::thread> threads;
    try {
        threads.reserve(static_cast<size_t>(blocks - 1));
        for (int idx = 1; idx < blocks; idx++) {
            threads.emplace_back([&gate, kernel, args, g = group.get(), idx, blocks] {
                shmem_arch_wait wait = SHMEM_ARCH_WAIT_INIT;
                int s;
                while ((s = gate.state.load(std::memory_order_acquire)) == 0) {
                    shmem_arch_spin(&wait);
                }
                if (s == 1) run_block(kernel, args, g, idx, blocks);
            });
        }
    } catch (const std::exception &e) {
        gate.state.store(2, std::memory_order_release);
        for (auto &t : threads) t.join();
        log_call_error(kLaunch, "blocks=%d: could not start block %zu's thread (%s); no block ran",
                       blocks, threads.size() + 1, e.what());
        return -1;
    }
    gate.state.store(1, std::memory_order_release);
    run_block(kernel, args, group.get(), 0, blocks);
    for (auto &t : threads) t.join();
    return 0;
}

SHMEM_EXPORT int shmemx_team_kernel_id(const void *team) {
    const shmem_team_s *t = team_find(static_cast<shmem_team_t>(const_cast<void *>(team)));
    return t == nullptr ? -1 : t->slot;
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
