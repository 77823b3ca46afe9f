// cuda_standin.cc: a stand-in of NVIDIA's CUDA driver (libcuda.so.1) for the tests, over host
// memory. It owns devices and their primary contexts, device memory (memfd objects mapped at
// their device addresses inside reserved ranges, or cuMemAlloc blocks), sharing of that memory
// through POSIX file descriptors (a dup of the memfd, which the program passes on itself),
// streams (one in-order worker thread each, with the legacy default stream's implicit ordering),
// host functions, stream memory operations (write and wait on a 32- or 64-bit word), modules
// of PTX text with host models of the library's own stream kernels (no GPU code runs here: a
// launch of any other kernel is CUDA_ERROR_NOT_SUPPORTED), and fault injection. It models what
// cuda.h documents, refuses misuse loudly (the code and one `cuda stand-in:` line on stderr naming
// the call and the argument), and must never be installed or linked by the library: the library
// finds it at run time like the real driver.
//
// Rules it holds the library to, beyond the happy path:
// - cuDriverGetVersion, cuGetErrorName and cuGetErrorString answer before cuInit (as the
//   driver's do); every other call before cuInit returns CUDA_ERROR_NOT_INITIALIZED.
// - Memory and stream calls need a current context (CUDA_ERROR_INVALID_CONTEXT).
// - Mapped memory is inaccessible until cuMemSetAccess grants access: a copy, memset or stream
//   memory operation touching it returns CUDA_ERROR_INVALID_VALUE, the code the driver gives for
//   an address it cannot resolve as accessible memory (a kernel would fault with
//   CUDA_ERROR_ILLEGAL_ADDRESS, a sticky error no host call should be taught to expect).
// - Real CUDA forbids driver calls inside a host function (cuLaunchHostFunc): here every driver
//   call made from one fails with CUDA_ERROR_NOT_PERMITTED, so nothing can come to rely on it.
// - Work a stream reaches after its memory went away fails with CUDA_ERROR_ILLEGAL_ADDRESS,
//   reported (once) by the next cuStreamSynchronize of that stream.
// - cuMemMap's offset must be 0 (cuda.h: "currently must be zero").
// - cuStreamDestroy returns at once and the stream's queued work still runs (only
//   cuCtxSynchronize waits for it), so a program that destroys a stream it queued the library's
//   work on finds out whether finalize waits for that work.
//
// Variables (read at the first cuInit): CUDA_STANDIN_DEVICES (1, the shape of one H100 machine;
// CUDA_VISIBLE_DEVICES selects and renumbers among them as with CUDA: the list ends at its first
// entry that is not a device), CUDA_STANDIN_HBM_BYTES (80 GiB per device, per process),
// CUDA_STANDIN_STRICT (0; 1 keeps device memory PROT_NONE to the program: a CPU access is a
// SIGSEGV, copies go through the stand-in's own view), CUDA_STANDIN_WAIT_TIMEOUT (60 s: a
// cuStreamWaitValue still unsatisfied after it fails its stream with CUDA_ERROR_TIMEOUT),
// CUDA_STANDIN_FAIL=<call>[:<nth>][,...] (that call, the nth time (1: the first), fails with its
// natural code: CUDA_ERROR_OUT_OF_MEMORY for cuMemCreate and cuMemAlloc, CUDA_ERROR_INVALID_VALUE
// otherwise).
#include "cuda_standin.h"
#include "standin_util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <set>
#include <shared_mutex>
#include <string>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

namespace {

using standin::first_start_in;
using standin::parse_size;
using standin::reserve_range;
using standin::round_up;
using standin::unmap_to_reserved;

constexpr size_t kGranularity = size_t{2} << 20;  // both the minimum and the recommended
constexpr size_t kPage = 4096;
constexpr int kMaxDevices = 64;
constexpr const char *kMemfdPrefix = "cuda-standin.dev";

// ---- errors ---------------------------------------------------------------------------------

struct CodeText {
    CUresult code;
    const char *name;
    const char *text;
};

const CodeText kCodes[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_DEINITIALIZED, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {CUDA_ERROR_STUB_LIBRARY, "CUDA_ERROR_STUB_LIBRARY", "the driver is a stub library"},
    {CUDA_ERROR_DEVICE_UNAVAILABLE, "CUDA_ERROR_DEVICE_UNAVAILABLE",
     "the device is not available now"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_ALREADY_MAPPED, "CUDA_ERROR_ALREADY_MAPPED", "the resource is already mapped"},
    {CUDA_ERROR_NOT_MAPPED, "CUDA_ERROR_NOT_MAPPED", "the resource is not mapped"},
    {CUDA_ERROR_INVALID_PTX, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {CUDA_ERROR_OPERATING_SYSTEM, "CUDA_ERROR_OPERATING_SYSTEM", "OS call failed"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_ILLEGAL_STATE, "CUDA_ERROR_ILLEGAL_STATE", "the resource is in an illegal state"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS",
     "an illegal memory access was encountered"},
    {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
     "too many resources requested for launch"},
    {CUDA_ERROR_CONTEXT_IS_DESTROYED, "CUDA_ERROR_CONTEXT_IS_DESTROYED",
     "the current context was destroyed"},
    {CUDA_ERROR_ILLEGAL_INSTRUCTION, "CUDA_ERROR_ILLEGAL_INSTRUCTION",
     "an illegal instruction was encountered"},
    {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {CUDA_ERROR_NOT_PERMITTED, "CUDA_ERROR_NOT_PERMITTED", "operation not permitted"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
     "the display driver and the CUDA driver do not match"},
    {CUDA_ERROR_TIMEOUT, "CUDA_ERROR_TIMEOUT", "the wait operation timed out"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

const CodeText *code_text(CUresult code) {
    for (const CodeText &c : kCodes) {
        if (c.code == code) return &c;
    }
    return nullptr;
}

const char *code_name(CUresult code) {
    const CodeText *c = code_text(code);
    return c ? c->name : "unknown code";
}

std::string format(const char *call, CUresult code, const char *fmt, va_list ap) {
    char text[640];
    vsnprintf(text, sizeof text, fmt, ap);
    return std::string(call) + ": " + text + " (" + code_name(code) + " " +
           std::to_string(static_cast<int>(code)) + ")";
}

// Misuse or failure of `call`: one line on stderr, the code.
__attribute__((format(printf, 3, 4))) CUresult fail(const char *call, CUresult code,
                                                    const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    std::string msg = format(call, code, fmt, ap);
    va_end(ap);
    fprintf(stderr, "cuda stand-in: %s\n", msg.c_str());
    return code;
}

// The same for work a stream reached: the line now, the code kept for cuStreamSynchronize.
__attribute__((format(printf, 4, 5))) CUresult fail_async(std::string *keep, const char *call,
                                                          CUresult code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    std::string msg = format(call, code, fmt, ap);
    va_end(ap);
    fprintf(stderr, "cuda stand-in: %s (on a stream)\n", msg.c_str());
    if (keep) *keep = msg;
    return code;
}

unsigned long long ull(uint64_t v) { return static_cast<unsigned long long>(v); }

// ---- configuration --------------------------------------------------------------------------

const char *const kCalls[] = {
    "cuInit",
    "cuDriverGetVersion",
    "cuGetErrorName",
    "cuGetErrorString",
    "cuDeviceGetCount",
    "cuDeviceGet",
    "cuDeviceGetAttribute",
    "cuDevicePrimaryCtxRetain",
    "cuDevicePrimaryCtxRelease",
    "cuCtxGetCurrent",
    "cuCtxSetCurrent",
    "cuCtxGetDevice",
    "cuCtxSynchronize",
    "cuMemGetAllocationGranularity",
    "cuMemAddressReserve",
    "cuMemAddressFree",
    "cuMemCreate",
    "cuMemRelease",
    "cuMemMap",
    "cuMemUnmap",
    "cuMemSetAccess",
    "cuMemExportToShareableHandle",
    "cuMemImportFromShareableHandle",
    "cuMemAlloc",
    "cuMemFree",
    "cuMemcpy",
    "cuMemcpyAsync",
    "cuMemsetD8",
    "cuMemsetD8Async",
    "cuStreamCreate",
    "cuStreamDestroy",
    "cuStreamSynchronize",
    "cuLaunchHostFunc",
    "cuStreamWriteValue32",
    "cuStreamWaitValue32",
    "cuStreamWriteValue64",
    "cuStreamWaitValue64",
    "cuModuleLoadData",
    "cuModuleGetFunction",
    "cuLaunchKernel",
};

struct Fault {
    std::string call;
    uint64_t nth = 1;
    uint64_t seen = 0;
};

struct Config {
    std::vector<int> visible;  // ordinal -> the stand-in's device number
    uint64_t hbm_bytes = uint64_t{80} << 30;
    bool strict = false;
    uint64_t wait_timeout_s = 60;
    std::vector<Fault> faults;
};

bool parse_count(const std::string &text, uint64_t *out) {
    return !text.empty() && text.find_first_not_of("0123456789") == std::string::npos &&
           parse_size(text.c_str(), out);
}

// Reads the variables; on a bad value fails cuInit naming the variable and its value.
CUresult read_config(Config *cfg) {
    const char *call = "cuInit";
    Config c;
    uint64_t devices = 1;
    if (const char *v = getenv("CUDA_STANDIN_DEVICES")) {
        if (!parse_count(v, &devices) || devices > static_cast<uint64_t>(kMaxDevices))
            return fail(call, CUDA_ERROR_INVALID_VALUE,
                        "CUDA_STANDIN_DEVICES=\"%s\": expected a count from 0 to %d", v,
                        kMaxDevices);
    }
    if (const char *v = getenv("CUDA_VISIBLE_DEVICES")) {
        // As CUDA does: the devices listed, numbered from 0 in the list's order; the list ends
        // at its first entry that is not a device (or repeats one).
        std::string list(v);
        size_t at = 0;
        while (at <= list.size()) {
            size_t comma = list.find(',', at);
            std::string item = list.substr(at, comma == std::string::npos ? comma : comma - at);
            uint64_t id = 0;
            bool dup = false;
            if (parse_count(item, &id))
                for (int d : c.visible) dup = dup || static_cast<uint64_t>(d) == id;
            if (!parse_count(item, &id) || id >= devices || dup) {
                if (!item.empty() || comma != std::string::npos)
                    fprintf(stderr,
                            "cuda stand-in: cuInit: CUDA_VISIBLE_DEVICES=\"%s\": the list ends "
                            "at \"%s\", which is not one of devices 0 to %d (or repeats one)\n",
                            v, item.c_str(), static_cast<int>(devices) - 1);
                break;
            }
            c.visible.push_back(static_cast<int>(id));
            if (comma == std::string::npos) break;
            at = comma + 1;
        }
    } else {
        for (uint64_t d = 0; d < devices; ++d) c.visible.push_back(static_cast<int>(d));
    }
    if (const char *v = getenv("CUDA_STANDIN_HBM_BYTES")) {
        if (!parse_size(v, &c.hbm_bytes))
            return fail(call, CUDA_ERROR_INVALID_VALUE,
                        "CUDA_STANDIN_HBM_BYTES=\"%s\": expected a byte count (suffix K, M or G "
                        "allowed)",
                        v);
    }
    if (const char *v = getenv("CUDA_STANDIN_STRICT")) {
        if (strcmp(v, "0") && strcmp(v, "1") && *v)
            return fail(call, CUDA_ERROR_INVALID_VALUE,
                        "CUDA_STANDIN_STRICT=\"%s\": expected 0 or 1", v);
        c.strict = strcmp(v, "1") == 0;
    }
    if (const char *v = getenv("CUDA_STANDIN_WAIT_TIMEOUT")) {
        if (!parse_count(v, &c.wait_timeout_s) || c.wait_timeout_s == 0 || c.wait_timeout_s > 86400)
            return fail(call, CUDA_ERROR_INVALID_VALUE,
                        "CUDA_STANDIN_WAIT_TIMEOUT=\"%s\": expected seconds from 1 to 86400", v);
    }
    if (const char *v = getenv("CUDA_STANDIN_FAIL")) {
        std::string all(v);
        size_t at = 0;
        while (!all.empty() && at <= all.size()) {
            size_t comma = all.find(',', at);
            std::string item = all.substr(at, comma == std::string::npos ? comma : comma - at);
            Fault f;
            size_t colon = item.find(':');
            f.call = item.substr(0, colon);
            bool known = false;
            for (const char *name : kCalls) known = known || f.call == name;
            if (!known)
                return fail(call, CUDA_ERROR_INVALID_VALUE,
                            "CUDA_STANDIN_FAIL=\"%s\": \"%s\" is not a driver call of the "
                            "stand-in",
                            v, f.call.c_str());
            if (colon != std::string::npos) {
                std::string nth = item.substr(colon + 1);
                if (!parse_count(nth, &f.nth) || f.nth == 0)
                    return fail(call, CUDA_ERROR_INVALID_VALUE,
                                "CUDA_STANDIN_FAIL=\"%s\": \"%s\" is not a call number (1 is the "
                                "first call)",
                                v, nth.c_str());
            }
            c.faults.push_back(f);
            if (comma == std::string::npos) break;
            at = comma + 1;
        }
    }
    *cfg = c;
    return CUDA_SUCCESS;
}

// ---- state ----------------------------------------------------------------------------------

struct Stream;

// A device's primary context: one object per device, for the process's life, as in CUDA (the
// handle a retain returns is the same after a full release and a new retain). Between its last
// release and the next retain it is inactive: calls made with it current return
// CUDA_ERROR_CONTEXT_IS_DESTROYED.
struct Context {
    int device = 0;
    std::atomic<bool> active{true};
    std::shared_ptr<Stream> legacy;  // the NULL stream, started at first use
};

// A task returns its code and, on failure, the message to keep with it.
using Task = std::function<CUresult(std::string *msg)>;

// An in-order queue of tasks run by one worker thread.
struct Stream {
    Context *ctx = nullptr;
    bool blocking = true;  // CU_STREAM_DEFAULT: ordered with the legacy stream
    bool legacy = false;
    std::mutex mu;
    std::condition_variable cv;
    std::deque<Task> queue;
    uint64_t enqueued = 0;
    uint64_t done = 0;
    CUresult first_err = CUDA_SUCCESS;
    std::string first_msg;
    bool stop = false;
    std::thread worker;
    std::thread::id worker_id;
};

// Physical memory (cuMemCreate, or an import): a memfd. It is freed when its handle is
// released and its last mapping is gone.
struct Alloc {
    int fd = -1;
    size_t size = 0;
    int device = -1;  // ordinal here; -1 for an import of a device this process does not see
    bool imported = false;
    bool exportable = false;  // created with CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
    bool released = false;
    int maps = 0;
};

// Device memory at an address: a mapping (cuMemMap) or a cuMemAlloc block. `view` is where the
// stand-in reads and writes it: the address itself, or in strict mode a private alias.
struct Range {
    uintptr_t va = 0;
    size_t size = 0;      // bytes a copy may touch
    size_t map_size = 0;  // bytes mapped (cuMemAlloc rounds up to pages)
    char *view = nullptr;
    Alloc *alloc = nullptr;  // null for a cuMemAlloc block
    int device = 0;
    unsigned access = CU_MEM_ACCESS_FLAGS_PROT_NONE;
};

// A kernel of a loaded module: its `.entry` name and its parameters' sizes in bytes, read from
// the PTX text.
struct Kernel {
    std::string name;
    std::vector<size_t> params;
};

// A module (cuModuleLoadData): the kernels its PTX declares.
struct Module {
    Context *ctx = nullptr;
    std::vector<std::unique_ptr<Kernel>> kernels;
};

struct Runtime {
    std::mutex mu;  // initialisation, contexts, streams
    std::atomic<bool> initialized{false};
    Config cfg;
    Context *primary[kMaxDevices] = {};  // made at the first retain, never freed
    int refs[kMaxDevices] = {};
    std::set<Context *> contexts;
    std::unordered_map<void *, std::shared_ptr<Stream>> streams;
    // Destroyed streams whose queued work may still run (cuStreamDestroy returns at once, as
    // CUDA's does); cuCtxSynchronize waits for them and lets them go.
    std::vector<std::shared_ptr<Stream>> retired;
    std::set<Module *> modules;  // never freed: the library keeps its module for the process
    std::set<const Kernel *> kernels;

    std::mutex fault_mu;
    std::atomic<bool> any_fault{false};

    // Memory: held shared by every copy, exclusively by whatever changes the maps below.
    std::shared_mutex mem;
    std::map<uintptr_t, Range> ranges;
    std::map<uintptr_t, size_t> reservations;
    std::map<uint64_t, Alloc *> handles;
    uint64_t next_handle = 1;
    uint64_t used[kMaxDevices] = {};
};

void fork_prepare();
void fork_parent();
void fork_child();

Runtime &rt() {
    static Runtime *r = [] {
        auto *created = new Runtime;  // never destroyed: threads may run past static destructors
        pthread_atfork(fork_prepare, fork_parent, fork_child);
        return created;
    }();
    return *r;
}

// A child of fork keeps none of the parent's threads: it must not wait on the parent's
// streams. Memory, handles and contexts stay (the mappings are the child's too).
void fork_prepare() {
    Runtime &r = rt();
    r.mu.lock();
    r.fault_mu.lock();
    r.mem.lock();
}

void fork_parent() {
    Runtime &r = rt();
    r.mem.unlock();
    r.fault_mu.unlock();
    r.mu.unlock();
}

void fork_child() {
    Runtime &r = rt();
    // The objects stay allocated on purpose: destroying a joinable std::thread would abort.
    for (auto &s : r.streams) new std::shared_ptr<Stream>(s.second);
    r.streams.clear();
    for (auto &s : r.retired) new std::shared_ptr<Stream>(s);
    r.retired.clear();
    for (Context *c : r.contexts) {
        if (c->legacy) new std::shared_ptr<Stream>(c->legacy);
        c->legacy.reset();
    }
    // The child's only thread holds the locks; fresh locks are the portable way out.
    new (&r.mem) std::shared_mutex;
    new (&r.fault_mu) std::mutex;
    new (&r.mu) std::mutex;
}

thread_local Context *t_ctx = nullptr;
thread_local bool t_in_host_fn = false;

Context *current() {
    Context *c = t_ctx;
    return c && c->active.load() ? c : nullptr;
}

CUresult injected(const char *call) {
    Runtime &r = rt();
    if (!r.any_fault.load()) return CUDA_SUCCESS;
    std::lock_guard<std::mutex> lk(r.fault_mu);
    for (Fault &f : r.cfg.faults) {
        if (f.call != call || ++f.seen != f.nth) continue;
        CUresult code = CUDA_ERROR_INVALID_VALUE;
        if (f.call == "cuMemCreate" || f.call == "cuMemAlloc") code = CUDA_ERROR_OUT_OF_MEMORY;
        return fail(call, code, "failure injected at call %llu (CUDA_STANDIN_FAIL)", ull(f.nth));
    }
    return CUDA_SUCCESS;
}

// Every call: not from a host function, then (unless `before_init`) after cuInit, then not one
// CUDA_STANDIN_FAIL fails.
CUresult enter(const char *call, bool before_init = false) {
    if (t_in_host_fn)
        return fail(call, CUDA_ERROR_NOT_PERMITTED,
                    "called from inside a host function (cuLaunchHostFunc), where CUDA forbids "
                    "driver calls");
    if (!before_init && !rt().initialized.load())
        return fail(call, CUDA_ERROR_NOT_INITIALIZED, "called before cuInit");
    return injected(call);
}

// enter() and a current context on this thread.
CUresult enter_ctx(const char *call, Context **ctx) {
    if (CUresult rc = enter(call)) return rc;
    Context *c = current();
    if (!c && t_ctx)
        return fail(call, CUDA_ERROR_CONTEXT_IS_DESTROYED,
                    "this thread's current context (device %d) was released by its last "
                    "cuDevicePrimaryCtxRelease",
                    t_ctx->device);
    if (!c)
        return fail(call, CUDA_ERROR_INVALID_CONTEXT,
                    "this thread has no current context (cuDevicePrimaryCtxRetain and "
                    "cuCtxSetCurrent first)");
    *ctx = c;
    return CUDA_SUCCESS;
}

int device_count() { return static_cast<int>(rt().cfg.visible.size()); }

CUresult check_device(const char *call, const char *what, int id) {
    int n = device_count();
    if (id < 0 || id >= n)
        return fail(call, CUDA_ERROR_INVALID_DEVICE, "%s=%d: devices are 0 to %d", what, id, n - 1);
    return CUDA_SUCCESS;
}

// ---- streams --------------------------------------------------------------------------------

void run_stream(Stream *s) {
    t_ctx = s->ctx;
    std::unique_lock<std::mutex> lk(s->mu);
    for (;;) {
        s->cv.wait(lk, [s] { return s->stop || !s->queue.empty(); });
        if (s->queue.empty()) return;  // stopped and drained
        Task task = std::move(s->queue.front());
        s->queue.pop_front();
        lk.unlock();
        std::string msg;
        CUresult rc = task(&msg);
        lk.lock();
        if (rc != CUDA_SUCCESS && s->first_err == CUDA_SUCCESS) {
            s->first_err = rc;
            s->first_msg = msg;
        }
        ++s->done;
        s->cv.notify_all();
    }
}

// A new stream and its worker; null when no thread can be started (no exception may cross the
// C interface).
std::shared_ptr<Stream> start_stream(Context *ctx, bool blocking, bool legacy) {
    auto s = std::make_shared<Stream>();
    s->ctx = ctx;
    s->blocking = blocking;
    s->legacy = legacy;
    try {
        s->worker = std::thread(run_stream, s.get());
    } catch (const std::system_error &) {
        return nullptr;
    }
    s->worker_id = s->worker.get_id();
    return s;
}

// Lets the worker finish what is queued, then joins it.
void stop_stream(const std::shared_ptr<Stream> &s) {
    {
        std::lock_guard<std::mutex> lk(s->mu);
        s->stop = true;
    }
    s->cv.notify_all();
    if (s->worker.joinable()) s->worker.join();
}

// The stream a handle names: NULL is the current context's legacy default stream. Work is
// enqueued only on a stream of the current context (`enqueue_on`).
CUresult get_stream(const char *call, CUstream handle, Context *ctx, std::shared_ptr<Stream> *out,
                    bool enqueue_on = false) {
    Runtime &r = rt();
    std::lock_guard<std::mutex> lk(r.mu);
    if (!handle) {
        if (!ctx->legacy) ctx->legacy = start_stream(ctx, true, true);
        if (!ctx->legacy)
            return fail(call, CUDA_ERROR_OUT_OF_MEMORY,
                        "hStream=NULL: cannot start the legacy default stream's thread");
        *out = ctx->legacy;
        return CUDA_SUCCESS;
    }
    auto it = r.streams.find(handle);
    if (it == r.streams.end())
        return fail(call, CUDA_ERROR_INVALID_HANDLE,
                    "stream=%p is not a live stream (destroyed, never created, or made before "
                    "fork by the parent)",
                    static_cast<void *>(handle));
    if (enqueue_on && it->second->ctx != ctx)
        return fail(call, CUDA_ERROR_INVALID_CONTEXT,
                    "stream=%p belongs to device %d's context, not to the current one (device %d)",
                    static_cast<void *>(handle), it->second->ctx->device, ctx->device);
    *out = it->second;
    return CUDA_SUCCESS;
}

struct Mark {
    std::shared_ptr<Stream> stream;
    uint64_t target;
};

void wait_marks(const std::vector<Mark> &marks) {
    for (const Mark &m : marks) {
        std::unique_lock<std::mutex> lk(m.stream->mu);
        m.stream->cv.wait(lk, [&m] { return m.stream->done >= m.target; });
    }
}

// Enqueues `task` on `s` with the legacy stream's ordering: work on the legacy stream waits for
// the work already enqueued on the context's blocking streams, and work on a blocking stream
// waits for the work already enqueued on the legacy stream. Returns the task's number.
uint64_t enqueue(const std::shared_ptr<Stream> &s, Task task) {
    Runtime &r = rt();
    std::vector<Mark> marks;
    {
        std::lock_guard<std::mutex> lk(r.mu);
        std::vector<std::shared_ptr<Stream>> others;
        if (s->legacy) {
            for (auto &o : r.streams) {
                if (o.second->ctx == s->ctx && o.second->blocking) others.push_back(o.second);
            }
        } else if (s->blocking && s->ctx->legacy) {
            others.push_back(s->ctx->legacy);
        }
        for (auto &o : others) {
            std::lock_guard<std::mutex> olk(o->mu);
            if (o->done < o->enqueued) marks.push_back({o, o->enqueued});
        }
    }
    Task run = marks.empty() ? std::move(task) : Task([marks, task](std::string *msg) {
        wait_marks(marks);
        return task(msg);
    });
    uint64_t n;
    {
        std::lock_guard<std::mutex> lk(s->mu);
        s->queue.push_back(std::move(run));
        n = ++s->enqueued;
    }
    s->cv.notify_all();
    return n;
}

// Waits until the tasks enqueued so far have run; returns the stream's first error, once.
CUresult sync_stream(Stream *s) {
    std::unique_lock<std::mutex> lk(s->mu);
    uint64_t target = s->enqueued;
    s->cv.wait(lk, [s, target] { return s->done >= target; });
    CUresult rc = s->first_err;
    if (rc != CUDA_SUCCESS) {
        fprintf(stderr, "cuda stand-in: cuStreamSynchronize: reports %s\n", s->first_msg.c_str());
        s->first_err = CUDA_SUCCESS;
        s->first_msg.clear();
    }
    return rc;
}

// Runs `task` on the current context's legacy stream and waits for it: the synchronous calls
// (cuMemcpy, cuMemsetD8) are ordered like CUDA's, and return the task's own code.
CUresult run_legacy(const char *call, Context *c, Task task) {
    std::shared_ptr<Stream> s;
    if (CUresult rc = get_stream(call, nullptr, c, &s)) return rc;
    auto result = std::make_shared<CUresult>(CUDA_SUCCESS);
    uint64_t n = enqueue(s, [task, result](std::string *msg) {
        *result = task(msg);
        return CUDA_SUCCESS;
    });
    std::unique_lock<std::mutex> lk(s->mu);
    s->cv.wait(lk, [&s, n] { return s->done >= n; });
    return *result;
}

// Deactivates a device's primary context and stops its streams (its last release). Called with
// r.mu held; returns the streams to stop once it is released.
std::vector<std::shared_ptr<Stream>> retire_context(Runtime &r, int dev) {
    std::vector<std::shared_ptr<Stream>> stopping;
    Context *c = r.primary[dev];
    r.refs[dev] = 0;
    if (!c) return stopping;
    c->active = false;
    if (c->legacy) stopping.push_back(std::move(c->legacy));
    for (auto it = r.streams.begin(); it != r.streams.end();) {
        if (it->second->ctx == c) {
            stopping.push_back(it->second);
            it = r.streams.erase(it);
        } else {
            ++it;
        }
    }
    return stopping;
}

// ---- memory ---------------------------------------------------------------------------------

const Range *range_at(Runtime &r, uintptr_t p) {
    auto it = r.ranges.upper_bound(p);
    if (it == r.ranges.begin()) return nullptr;
    --it;
    return p - it->first < it->second.map_size ? &it->second : nullptr;
}

std::pair<uintptr_t, size_t> reservation_at(Runtime &r, uintptr_t p) {
    auto it = r.reservations.upper_bound(p);
    if (it == r.reservations.begin()) return {0, 0};
    --it;
    if (p - it->first < it->second) return {it->first, it->second};
    return {0, 0};
}

const char *access_name(unsigned a) {
    switch (a) {
    case CU_MEM_ACCESS_FLAGS_PROT_NONE: return "none";
    case CU_MEM_ACCESS_FLAGS_PROT_READ: return "read-only";
    default: return "read-write";
    }
}

struct Piece {
    char *view;
    size_t len;
};

enum class Use { read, write };

// Resolves [addr, addr + n) for argument `what` of `call`: device memory (one or more
// contiguous ranges, each with the access `use` needs) or, unless `device_only`, host memory
// wholly outside device memory. Anything else is refused naming the address (r.mem held).
// `keep` set: the failure belongs to work a stream reached.
CUresult resolve(Runtime &r, const char *call, const char *what, CUdeviceptr addr, size_t n,
                 Use use, bool device_only, std::vector<Piece> *out, std::string *keep,
                 bool *is_device = nullptr) {
    auto bad = [&](CUresult code, const char *fmt, auto... args) {
        if (keep) return fail_async(keep, call, CUDA_ERROR_ILLEGAL_ADDRESS, fmt, args...);
        return fail(call, code, fmt, args...);
    };
    uintptr_t p = static_cast<uintptr_t>(addr);
    out->clear();
    if (!addr) return bad(CUDA_ERROR_INVALID_VALUE, "%s=0 (NULL)", what);
    if (n > UINTPTR_MAX - p)
        return bad(CUDA_ERROR_INVALID_VALUE, "%s=0x%llx: %zu bytes wrap the address space", what,
                   ull(addr), n);
    if (range_at(r, p)) {
        uintptr_t cur = p;
        size_t left = n;
        while (left) {
            const Range *rg = range_at(r, cur);
            if (!rg || cur - rg->va >= rg->size)
                return bad(CUDA_ERROR_INVALID_VALUE,
                           "%s=0x%llx: [0x%llx, +%zu) runs past device memory at 0x%llx", what,
                           ull(addr), ull(addr), n, ull(cur));
            unsigned need = use == Use::write ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE
                                              : CU_MEM_ACCESS_FLAGS_PROT_READ;
            if ((rg->access & need) != need)
                return bad(CUDA_ERROR_INVALID_VALUE,
                           "%s=0x%llx: the mapping [0x%llx, +%zu) has %s access (cuMemSetAccess "
                           "must grant %s access first)",
                           what, ull(addr), ull(rg->va), rg->size, access_name(rg->access),
                           use == Use::write ? "read-write" : "read");
            size_t len = rg->va + rg->size - cur;
            if (len > left) len = left;
            out->push_back({rg->view + (cur - rg->va), len});
            cur += len;
            left -= len;
        }
        if (is_device) *is_device = true;
        return CUDA_SUCCESS;
    }
    auto res = reservation_at(r, p);
    if (res.first)
        return bad(CUDA_ERROR_INVALID_VALUE,
                   "%s=0x%llx is not mapped: it lies in the reserved range [0x%llx, +%zu) but "
                   "nothing is mapped there",
                   what, ull(addr), ull(res.first), res.second);
    if (device_only)
        return bad(CUDA_ERROR_INVALID_VALUE,
                   "%s=0x%llx is not device memory (neither mapped by cuMemMap nor from "
                   "cuMemAlloc)",
                   what, ull(addr));
    uintptr_t dev = n ? first_start_in(r.ranges, p, n) : 0;
    if (!dev && n) dev = first_start_in(r.reservations, p, n);
    if (dev)
        return bad(CUDA_ERROR_INVALID_VALUE,
                   "%s=0x%llx: [0x%llx, +%zu) starts in host memory and runs into device memory "
                   "at 0x%llx",
                   what, ull(addr), ull(addr), n, ull(dev));
    // Host memory must at least be mapped (msync fails with ENOMEM on a hole): an address whose
    // device memory was freed is refused rather than faulting in the stand-in.
    if (n) {
        uintptr_t first = p & ~(uintptr_t{kPage} - 1);
        if (msync(reinterpret_cast<void *>(first), p + n - first, MS_ASYNC) != 0 && errno == ENOMEM)
            return bad(CUDA_ERROR_INVALID_VALUE,
                       "%s=0x%llx: [0x%llx, +%zu) is neither device memory nor mapped host memory",
                       what, ull(addr), ull(addr), n);
    }
    out->push_back({reinterpret_cast<char *>(p), n});
    if (is_device) *is_device = false;
    return CUDA_SUCCESS;
}

void copy_pieces(const std::vector<Piece> &dst, const std::vector<Piece> &src) {
    size_t di = 0, doff = 0, si = 0, soff = 0;
    while (di < dst.size() && si < src.size()) {
        size_t len = dst[di].len - doff;
        if (src[si].len - soff < len) len = src[si].len - soff;
        memmove(dst[di].view + doff, src[si].view + soff, len);
        doff += len;
        soff += len;
        if (doff == dst[di].len) ++di, doff = 0;
        if (soff == src[si].len) ++si, soff = 0;
    }
}

// A copy, checked and done (r.mem taken here).
CUresult do_copy(const char *call, CUdeviceptr dst, CUdeviceptr src, size_t n, std::string *keep) {
    if (n == 0) return CUDA_SUCCESS;
    Runtime &r = rt();
    std::shared_lock<std::shared_mutex> lk(r.mem);
    std::vector<Piece> d, s;
    if (CUresult rc = resolve(r, call, "dst", dst, n, Use::write, false, &d, keep)) return rc;
    if (CUresult rc = resolve(r, call, "src", src, n, Use::read, false, &s, keep)) return rc;
    copy_pieces(d, s);
    return CUDA_SUCCESS;
}

CUresult do_set(const char *call, CUdeviceptr dst, unsigned char v, size_t n, std::string *keep) {
    if (n == 0) return CUDA_SUCCESS;
    Runtime &r = rt();
    std::shared_lock<std::shared_mutex> lk(r.mem);
    std::vector<Piece> d;
    if (CUresult rc = resolve(r, call, "dstDevice", dst, n, Use::write, true, &d, keep)) return rc;
    for (const Piece &p : d) memset(p.view, v, p.len);
    return CUDA_SUCCESS;
}

CUresult charge(Runtime &r, const char *call, int dev, size_t size) {
    if (size > r.cfg.hbm_bytes || r.used[dev] > r.cfg.hbm_bytes - size)
        return fail(call, CUDA_ERROR_OUT_OF_MEMORY,
                    "size=%zu: device %d has %llu of CUDA_STANDIN_HBM_BYTES=%llu bytes in use",
                    size, dev, ull(r.used[dev]), ull(r.cfg.hbm_bytes));
    r.used[dev] += size;
    return CUDA_SUCCESS;
}

// A memfd named after the stand-in's device number, so that an importer can tell its device.
int device_memfd(int ordinal, size_t size) {
    char name[64];
    snprintf(name, sizeof name, "%s%d", kMemfdPrefix, rt().cfg.visible[ordinal]);
    return standin::make_memfd(name, size);
}

// Frees an allocation once its handle is released and nothing maps it (r.mem held exclusively).
void maybe_free(Runtime &r, Alloc *a) {
    if (!a->released || a->maps > 0) return;
    if (!a->imported && a->device >= 0) r.used[a->device] -= a->size;
    close(a->fd);
    delete a;
}

// The live handle `h` names, or null (r.mem held).
Alloc *alloc_of(Runtime &r, CUmemGenericAllocationHandle h) {
    auto it = r.handles.find(h);
    return it == r.handles.end() ? nullptr : it->second;
}

// Unmaps one range (r.mem held exclusively); the range is erased by the caller.
void drop_range(Runtime &r, Range &rg) {
    if (rg.view != reinterpret_cast<char *>(rg.va)) munmap(rg.view, rg.map_size);
    if (rg.alloc) {
        unmap_to_reserved(rg.va, rg.map_size);
        --rg.alloc->maps;
        maybe_free(r, rg.alloc);
    } else {
        munmap(reinterpret_cast<void *>(rg.va), rg.map_size);
        r.used[rg.device] -= rg.map_size;
    }
}

int prot_of(unsigned access) {
    switch (access) {
    case CU_MEM_ACCESS_FLAGS_PROT_READ: return PROT_READ;
    case CU_MEM_ACCESS_FLAGS_PROT_READWRITE: return PROT_READ | PROT_WRITE;
    default: return PROT_NONE;
    }
}

// The ranges making up exactly [p, p + size): consecutive whole mappings of cuMemMap; false
// when the span starts or ends inside one, has a hole, or holds a cuMemAlloc block (r.mem held).
bool whole_mappings(Runtime &r, uintptr_t p, size_t size, std::vector<Range *> *out) {
    out->clear();
    uintptr_t cur = p;
    while (cur - p < size) {
        auto it = r.ranges.find(cur);
        if (it == r.ranges.end() || !it->second.alloc) return false;
        out->push_back(&it->second);
        cur += it->second.map_size;
    }
    return cur - p == size && size > 0;
}

// ---- stream memory operations ---------------------------------------------------------------

bool compare(uint64_t word, uint64_t value, unsigned op, bool wide) {
    switch (op) {
    case CU_STREAM_WAIT_VALUE_GEQ:
        return wide ? static_cast<int64_t>(word - value) >= 0
                    : static_cast<int32_t>(static_cast<uint32_t>(word) -
                                           static_cast<uint32_t>(value)) >= 0;
    case CU_STREAM_WAIT_VALUE_EQ: return word == value;
    case CU_STREAM_WAIT_VALUE_AND: return (word & value) != 0;
    default: {
        uint64_t nor = ~(word | value);
        return (wide ? nor : static_cast<uint32_t>(nor)) != 0;
    }
    }
}

const char *op_name(unsigned op) {
    switch (op) {
    case CU_STREAM_WAIT_VALUE_GEQ: return "GEQ";
    case CU_STREAM_WAIT_VALUE_EQ: return "EQ";
    case CU_STREAM_WAIT_VALUE_AND: return "AND";
    default: return "NOR";
    }
}

// Checks the word at `addr` (4 or 8 bytes, aligned, device memory with the access `use` needs)
// and returns where the stand-in reads it (r.mem held).
CUresult word_at(Runtime &r, const char *call, CUdeviceptr addr, size_t width, Use use, char **view,
                 std::string *keep) {
    if (addr % width) {
        if (keep)
            return fail_async(keep, call, CUDA_ERROR_ILLEGAL_ADDRESS,
                              "addr=0x%llx is not %zu-byte aligned", ull(addr), width);
        return fail(call, CUDA_ERROR_INVALID_VALUE, "addr=0x%llx is not %zu-byte aligned",
                    ull(addr), width);
    }
    std::vector<Piece> p;
    if (CUresult rc = resolve(r, call, "addr", addr, width, use, true, &p, keep)) return rc;
    if (p.size() != 1)  // a word split across two mappings: never aligned, kept for safety
        return fail(call, CUDA_ERROR_INVALID_VALUE, "addr=0x%llx: the word spans two mappings",
                    ull(addr));
    *view = p[0].view;
    return CUDA_SUCCESS;
}

// Work a stream reached that waits for the word at `addr` (4 or 8 bytes, read with acquire):
// polls it, napping between reads, until `holds(word)`; still not after `timeout_s` seconds, it
// fails the stream with CUDA_ERROR_TIMEOUT, saying "<what> <word>, still not <wanted>".
template <typename Holds>
CUresult poll_word(const char *call, const char *what, CUdeviceptr addr, size_t width,
                   const std::string &wanted, uint64_t timeout_s, std::string *msg, Holds holds) {
    Runtime &r = rt();
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
    auto nap = std::chrono::microseconds(1);
    for (;;) {
        uint64_t word;
        {
            std::shared_lock<std::shared_mutex> lk(r.mem);
            char *view = nullptr;
            if (CUresult rc = word_at(r, call, addr, width, Use::read, &view, msg)) return rc;
            word = width == 4
                       ? __atomic_load_n(reinterpret_cast<uint32_t *>(view), __ATOMIC_ACQUIRE)
                       : __atomic_load_n(reinterpret_cast<uint64_t *>(view), __ATOMIC_ACQUIRE);
        }
        if (holds(word)) return CUDA_SUCCESS;
        if (std::chrono::steady_clock::now() > deadline)
            return fail_async(msg, call, CUDA_ERROR_TIMEOUT,
                              "%saddr=0x%llx: the word is %lld, still not %s after "
                              "CUDA_STANDIN_WAIT_TIMEOUT=%llu s",
                              what, ull(addr),
                              width == 4 ? static_cast<long long>(static_cast<int32_t>(word))
                                         : static_cast<long long>(word),
                              wanted.c_str(), ull(timeout_s));
        std::this_thread::sleep_for(nap);
        if (nap < std::chrono::microseconds(500)) nap *= 2;
    }
}

CUresult write_value(const char *call, CUstream stream, CUdeviceptr addr, uint64_t value,
                     unsigned flags, size_t width) {
    Context *c = nullptr;
    if (CUresult rc = enter_ctx(call, &c)) return rc;
    if (flags & ~static_cast<unsigned>(CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER))
        return fail(call, CUDA_ERROR_INVALID_VALUE, "flags=0x%x: unknown flag", flags);
    Runtime &r = rt();
    {
        std::shared_lock<std::shared_mutex> lk(r.mem);
        char *view = nullptr;
        if (CUresult rc = word_at(r, call, addr, width, Use::write, &view, nullptr)) return rc;
    }
    std::shared_ptr<Stream> s;
    if (CUresult rc = get_stream(call, stream, c, &s, true)) return rc;
    enqueue(s, [call, addr, value, width](std::string *msg) {
        Runtime &rr = rt();
        std::shared_lock<std::shared_mutex> lk(rr.mem);
        char *view = nullptr;
        if (CUresult rc = word_at(rr, call, addr, width, Use::write, &view, msg)) return rc;
        if (width == 4)
            __atomic_store_n(reinterpret_cast<uint32_t *>(view), static_cast<uint32_t>(value),
                             __ATOMIC_RELEASE);
        else
            __atomic_store_n(reinterpret_cast<uint64_t *>(view), value, __ATOMIC_RELEASE);
        return CUDA_SUCCESS;
    });
    return CUDA_SUCCESS;
}

CUresult wait_value(const char *call, CUstream stream, CUdeviceptr addr, uint64_t value,
                    unsigned flags, size_t width) {
    Context *c = nullptr;
    if (CUresult rc = enter_ctx(call, &c)) return rc;
    unsigned op = flags & ~static_cast<unsigned>(CU_STREAM_WAIT_VALUE_FLUSH);
    if (op > CU_STREAM_WAIT_VALUE_NOR)
        return fail(call, CUDA_ERROR_INVALID_VALUE,
                    "flags=0x%x: not one of GEQ, EQ, AND, NOR (with FLUSH optional)", flags);
    Runtime &r = rt();
    {
        std::shared_lock<std::shared_mutex> lk(r.mem);
        char *view = nullptr;
        if (CUresult rc = word_at(r, call, addr, width, Use::read, &view, nullptr)) return rc;
    }
    std::shared_ptr<Stream> s;
    if (CUresult rc = get_stream(call, stream, c, &s, true)) return rc;
    uint64_t timeout_s = r.cfg.wait_timeout_s;
    std::string wanted = std::string(op_name(op)) + " " + std::to_string(value);
    enqueue(s, [call, addr, value, width, op, timeout_s, wanted](std::string *msg) {
        return poll_word(call, "", addr, width, wanted, timeout_s, msg,
                         [=](uint64_t word) { return compare(word, value, op, width == 8); });
    });
    return CUDA_SUCCESS;
}

// ---- modules and kernels ------------------------------------------------------------------------

// The size of a PTX parameter type (`.u64`, `.b32`, ...), 0 for one the stand-in does not read.
size_t ptx_type_size(const std::string &type) {
    if (type.size() < 3 || type[0] != '.') return 0;
    const std::string bits = type.substr(2);
    const char kind = type[1];
    if (kind != 'u' && kind != 's' && kind != 'b' && kind != 'f') return 0;
    if (bits == "8") return 1;
    if (bits == "16") return 2;
    if (bits == "32") return 4;
    if (bits == "64") return 8;
    return 0;
}

// Reads the `.entry` declarations of PTX text: each kernel's name and parameter sizes. False,
// with `why`, for text that is not PTX the stand-in can read.
bool read_entries(const std::string &ptx, std::vector<std::unique_ptr<Kernel>> *out,
                  std::string *why) {
    if (ptx.find(".version") == std::string::npos || ptx.find(".target") == std::string::npos) {
        *why = "no .version or .target directive: not PTX text";
        return false;
    }
    auto is_name = [](char c) {
        return isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$';
    };
    for (size_t at = ptx.find(".entry"); at != std::string::npos; at = ptx.find(".entry", at + 1)) {
        size_t p = at + 6;
        while (p < ptx.size() && isspace(static_cast<unsigned char>(ptx[p]))) p++;
        size_t name_end = p;
        while (name_end < ptx.size() && is_name(ptx[name_end])) name_end++;
        size_t open = ptx.find('(', name_end), close = ptx.find(')', name_end);
        if (name_end == p || open == std::string::npos || close == std::string::npos ||
            close < open) {
            *why = "an .entry without a name and a parameter list";
            return false;
        }
        auto k = std::make_unique<Kernel>();
        k->name = ptx.substr(p, name_end - p);
        // ".param .u64 name, .param .u32 name"
        for (size_t q = ptx.find(".param", open); q != std::string::npos && q < close;
             q = ptx.find(".param", q + 6)) {
            size_t t = q + 6;
            while (t < close && isspace(static_cast<unsigned char>(ptx[t]))) t++;
            size_t t_end = t;
            while (t_end < close && !isspace(static_cast<unsigned char>(ptx[t_end]))) t_end++;
            size_t size = ptx_type_size(ptx.substr(t, t_end - t));
            if (size == 0) {
                *why = "kernel " + k->name + ": parameter type " + ptx.substr(t, t_end - t) +
                       " is not one the stand-in reads";
                return false;
            }
            k->params.push_back(size);
        }
        out->push_back(std::move(k));
    }
    if (out->empty()) {
        *why = "no .entry: the module holds no kernel";
        return false;
    }
    return true;
}

// The host models of the kernels the stand-in can launch: the library's stream kernels. Each
// reads its arguments from `args` (the parameters' bytes, in order) and runs as the stream's
// task; `check` says at launch whether the arguments are ones the kernel handles.
struct KernelModel {
    const char *name;
    std::vector<size_t> params;
    // Empty, or why the launch is refused.
    std::string (*check)(const std::vector<char> &args);
    CUresult (*run)(const char *call, const std::vector<char> &args, uint64_t timeout_s,
                    std::string *msg);
};

template <typename T>
T arg_at(const std::vector<char> &args, size_t offset) {
    T v;
    memcpy(&v, args.data() + offset, sizeof v);
    return v;
}

std::string no_check(const std::vector<char> &) { return std::string(); }

// shmem_stream_signal_add(u64 addr, u32 value): an atomic add at system scope, release.
CUresult run_signal_add(const char *call, const std::vector<char> &args, uint64_t,
                        std::string *msg) {
    CUdeviceptr addr = arg_at<uint64_t>(args, 0);
    uint32_t value = arg_at<uint32_t>(args, 8);
    Runtime &r = rt();
    std::shared_lock<std::shared_mutex> lk(r.mem);
    char *view = nullptr;
    if (CUresult rc = word_at(r, call, addr, 4, Use::write, &view, msg)) return rc;
    __atomic_fetch_add(reinterpret_cast<uint32_t *>(view), value, __ATOMIC_RELEASE);
    return CUDA_SUCCESS;
}

// shmem_stream_wait(u64 addr, u32 cmp, u32 value): until the signed word compares with value
// as cmp says (0 EQ, 1 NE, 2 GT, 3 GE, 4 LT, 5 LE); another cmp would never return.
std::string check_wait(const std::vector<char> &args) {
    uint32_t cmp = arg_at<uint32_t>(args, 8);
    if (cmp <= 5) return std::string();
    return "cmp=" + std::to_string(cmp) + ": not 0..5 (EQ..LE); the kernel would never return";
}

bool holds(int32_t word, int32_t value, uint32_t cmp) {
    switch (cmp) {
    case 0: return word == value;
    case 1: return word != value;
    case 2: return word > value;
    case 3: return word >= value;
    case 4: return word < value;
    default: return word <= value;
    }
}

CUresult run_wait(const char *call, const std::vector<char> &args, uint64_t timeout_s,
                  std::string *msg) {
    static const char *const kCmp[] = {"EQ", "NE", "GT", "GE", "LT", "LE"};
    CUdeviceptr addr = arg_at<uint64_t>(args, 0);
    uint32_t cmp = arg_at<uint32_t>(args, 8);
    int32_t value = arg_at<int32_t>(args, 12);
    return poll_word(call, "kernel shmem_stream_wait: ", addr, 4,
                     std::string(kCmp[cmp]) + " " + std::to_string(value), timeout_s, msg,
                     [=](uint64_t word) { return holds(static_cast<int32_t>(word), value, cmp); });
}

const KernelModel kModels[] = {
    {"shmem_stream_signal_add", {8, 4}, no_check, run_signal_add},
    {"shmem_stream_wait", {8, 4, 4}, check_wait, run_wait},
};

const KernelModel *model_of(const Kernel &k) {
    for (const KernelModel &m : kModels) {
        if (k.name == m.name && k.params == m.params) return &m;
    }
    return nullptr;
}

}  // namespace

extern "C" {

// ---- start-up and errors --------------------------------------------------------------------

CUresult cuInit(unsigned int Flags) {
    const char *call = "cuInit";
    if (CUresult rc = enter(call, true)) return rc;
    if (Flags != 0) return fail(call, CUDA_ERROR_INVALID_VALUE, "Flags=%u: must be 0", Flags);
    Runtime &r = rt();
    std::lock_guard<std::mutex> lk(r.mu);
    if (r.initialized.load()) return CUDA_SUCCESS;  // later calls change nothing, as in CUDA
    Config cfg;
    if (CUresult rc = read_config(&cfg)) return rc;
    if (cfg.visible.empty())
        return fail(call, CUDA_ERROR_NO_DEVICE,
                    "no device (CUDA_STANDIN_DEVICES=0, or CUDA_VISIBLE_DEVICES names none)");
    {
        std::lock_guard<std::mutex> flk(r.fault_mu);
        r.cfg = cfg;
        r.any_fault = !cfg.faults.empty();
    }
    r.initialized = true;
    return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int *driverVersion) {
    const char *call = "cuDriverGetVersion";
    if (CUresult rc = enter(call, true)) return rc;
    if (!driverVersion) return fail(call, CUDA_ERROR_INVALID_VALUE, "driverVersion=NULL");
    *driverVersion = CUDA_VERSION;
    return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult error, const char **pStr) {
    const char *call = "cuGetErrorName";
    if (CUresult rc = enter(call, true)) return rc;
    if (!pStr) return fail(call, CUDA_ERROR_INVALID_VALUE, "pStr=NULL");
    const CodeText *c = code_text(error);
    *pStr = c ? c->name : nullptr;
    return c ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;  // quiet: asking is no misuse
}

CUresult cuGetErrorString(CUresult error, const char **pStr) {
    const char *call = "cuGetErrorString";
    if (CUresult rc = enter(call, true)) return rc;
    if (!pStr) return fail(call, CUDA_ERROR_INVALID_VALUE, "pStr=NULL");
    const CodeText *c = code_text(error);
    *pStr = c ? c->text : nullptr;
    return c ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

// ---- devices and contexts -------------------------------------------------------------------

CUresult cuDeviceGetCount(int *count) {
    const char *call = "cuDeviceGetCount";
    if (CUresult rc = enter(call)) return rc;
    if (!count) return fail(call, CUDA_ERROR_INVALID_VALUE, "count=NULL");
    *count = device_count();
    return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal) {
    const char *call = "cuDeviceGet";
    if (CUresult rc = enter(call)) return rc;
    if (!device) return fail(call, CUDA_ERROR_INVALID_VALUE, "device=NULL");
    if (CUresult rc = check_device(call, "ordinal", ordinal)) return rc;
    *device = ordinal;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev) {
    const char *call = "cuDeviceGetAttribute";
    if (CUresult rc = enter(call)) return rc;
    if (!pi) return fail(call, CUDA_ERROR_INVALID_VALUE, "pi=NULL");
    if (CUresult rc = check_device(call, "dev", dev)) return rc;
    switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED: *pi = 1; break;
    default:
        return fail(call, CUDA_ERROR_INVALID_VALUE,
                    "attrib=%d is not an attribute the stand-in "
                    "models",
                    static_cast<int>(attrib));
    }
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
    const char *call = "cuDevicePrimaryCtxRetain";
    if (CUresult rc = enter(call)) return rc;
    if (!pctx) return fail(call, CUDA_ERROR_INVALID_VALUE, "pctx=NULL");
    if (CUresult rc = check_device(call, "dev", dev)) return rc;
    Runtime &r = rt();
    std::lock_guard<std::mutex> lk(r.mu);
    Context *c = r.primary[dev];
    if (!c) {
        c = new Context;  // kept for ever (see Context)
        c->device = dev;
        r.primary[dev] = c;
        r.contexts.insert(c);
    }
    c->active = true;
    ++r.refs[dev];
    *pctx = reinterpret_cast<CUcontext>(c);
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease(CUdevice dev) {
    const char *call = "cuDevicePrimaryCtxRelease";
    if (CUresult rc = enter(call)) return rc;
    if (CUresult rc = check_device(call, "dev", dev)) return rc;
    Runtime &r = rt();
    std::vector<std::shared_ptr<Stream>> stopping;
    {
        std::lock_guard<std::mutex> lk(r.mu);
        if (r.refs[dev] == 0)
            return fail(call, CUDA_ERROR_INVALID_CONTEXT,
                        "dev=%d: the primary context is not retained", dev);
        if (--r.refs[dev] > 0) return CUDA_SUCCESS;
        stopping = retire_context(r, dev);
    }
    for (auto &s : stopping) stop_stream(s);  // their work runs first
    return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *pctx) {
    const char *call = "cuCtxGetCurrent";
    if (CUresult rc = enter(call)) return rc;
    if (!pctx) return fail(call, CUDA_ERROR_INVALID_VALUE, "pctx=NULL");
    *pctx = reinterpret_cast<CUcontext>(current());  // NULL when none, as in CUDA
    return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx) {
    const char *call = "cuCtxSetCurrent";
    if (CUresult rc = enter(call)) return rc;
    if (!ctx) {
        t_ctx = nullptr;
        return CUDA_SUCCESS;
    }
    Runtime &r = rt();
    std::lock_guard<std::mutex> lk(r.mu);
    auto *c = reinterpret_cast<Context *>(ctx);
    if (!r.contexts.count(c))
        return fail(call, CUDA_ERROR_INVALID_CONTEXT, "ctx=%p is not a context",
                    static_cast<void *>(ctx));
    if (!c->active.load())
        return fail(call, CUDA_ERROR_CONTEXT_IS_DESTROYED,
                    "ctx=%p (device %d) is released (cuDevicePrimaryCtxRetain it again first)",
                    static_cast<void *>(ctx), c->device);
    t_ctx = c;
    return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice *device) {
    const char *call = "cuCtxGetDevice";
    Context *c = nullptr;
    if (CUresult rc = enter_ctx(call, &c)) return rc;
    if (!device) return fail(call, CUDA_ERROR_INVALID_VALUE, "device=NULL");
    *device = c->device;
    return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void) {
    const char *call = "cuCtxSynchronize";
    Context *c = nullptr;
    if (CUresult rc = enter_ctx(call, &c)) return rc;
    Runtime &r = rt();
    std::vector<std::shared_ptr<Stream>> live, gone;
    {
        std::lock_guard<std::mutex> lk(r.mu);
        for (auto &entry : r.streams) {
            if (entry.second->ctx == c) live.push_back(entry.second);
        }
        if (c->legacy) live.push_back(c->legacy);
        for (auto it = r.retired.begin(); it != r.retired.end();) {
            if ((*it)->ctx == c) {
                gone.push_back(*it);
                it = r.retired.erase(it);
            } else {
                ++it;
            }
        }
    }
    // Every stream of the context, destroyed ones too; the first failure is the answer.
    CUresult first = CUDA_SUCCESS;
    for (auto &st : live) {
        CUresult rc = sync_stream(st.get());
        if (first == CUDA_SUCCESS) first = rc;
    }
    for (auto &st : gone) {
        CUresult rc = sync_stream(st.get());
        if (first == CUDA_SUCCESS) first = rc;
        if (st->worker.joinable()) st->worker.join();
    }
    return first;
}

// ---- virtual memory -------------------------------------------------------------------------

CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                       CUmemAllocationGranularity_flags option) {
    const char *call = "cuMemGetAllocationGranularity";
    if (CUresult rc = enter(call)) return rc;
    if (!granularity) return fail(call, CUDA_ERROR_INVALID_VALUE, "granularity=NULL");
    if (!prop) return fail(call, CUDA_ERROR_INVALID_VALUE, "prop=NULL");
    if (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
        option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED)
        return fail(call, CUDA_ERROR_INVALID_VALUE, "option=%d is not a granularity option",
                    static_cast<int>(option));
    if (prop->type != CU_MEM_ALLOCATION_TYPE_PINNED)
        return fail(call, CUDA_ERROR_INVALID_VALUE,
                    "prop->type=%d: must be CU_MEM_ALLOCATION_TYPE_PINNED (1)",
                    static_cast<int>(prop->type));
    if (prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return fail(call, CUDA_ERROR_INVALID_VALUE,
                    "prop->location.type=%d: only CU_MEM_LOCATION_TYPE_DEVICE (1) is modelled",
                    static_cast<int>(prop->location.type));
    if (CUresult rc = check_device(call, "prop->location.id", prop->location.id)) return rc;
    *granularity = kGranularity;
    return CUDA_SUCCESS;
}

CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                             unsigned long long flags) {
    const char *call = "cuMemAddressReserve";
    Context *c = nullptr;
    if (CUresult rc = enter_ctx(call, &c)) return rc;
    if (!ptr) return fail(call, CUDA_ERROR_INVALID_VALUE, "ptr=NULL");
    if (size == 0 || size % kGranularity)
        return fail(call, CUDA_ERROR_INVALID_VALUE,
                    "size=%zu is not a positive multiple of the granularity %zu", size,
                    kGranularity);
    if (flags) return fail(call, CUDA_ERROR_INVALID_VALUE, "flags=0x%llx: must be 0", flags);
    if (alignment & (alignment - 1))
        return fail(call, CUDA_ERROR_INVALID_VALUE, "alignment=%zu is not a power of two",
                    alignment);
    (void)addr;  // a hint, which CUDA may ignore; the stand-in always does
    size_t align = alignment > kGranularity ? alignment : kGranularity;
    if (size > SIZE_MAX - align)
        return fail(call, CUDA_ERROR_OUT_OF_MEMORY, "size=%zu: too large", size);
    Runtime &r = rt();
    std::unique_lock<std::shared_mutex> lk(r.mem);
    void *base = reserve_range(size, align);
    if (!base)
        return fail(call, CUDA_ERROR_OUT_OF_MEMORY, "size=%zu: cannot reserve: %s", size,
                    strerror(errno));
    r.reservations[reinterpret_cast<uintptr_t>(base)] = size;
    *ptr = reinterpret_cast<uintptr_t>(base);
    return CUDA_SUCCESS;
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
    const char *call = "cuMemAddressFree";
    Context *c = nullptr;
    if (CUresult rc = enter_ctx(call, &c)) return rc;
    Runtime &r = rt();
    std::unique_lock<std::shared_mutex> lk(r.mem);
    auto it = r.reservations.find(static_cast<uintptr_t>(ptr));
    if (it == r.reservations.end())
        return fail(call, CUDA_ERROR_INVALID_VALUE,
                    "ptr=0x%llx is not an address cuMemAddressReserve returned", ull(ptr));
    if (size != it->second)
        return fail(call, CUDA_ERROR_INVALID_VALUE,
                    "ptr=0x%llx size=%zu: the reservation is %zu bytes (the whole reservation "
                    "must be freed)",
                    ull(ptr), size, it->second);
    if (uintptr_t m = first_start_in(r.ranges, it->first, it->second))
        return fail(call, CUDA_ERROR_INVALID_VALUE,
                    "ptr=0x%llx: memory is still mapped at 0x%llx (cuMemUnmap first)", ull(ptr),
                    ull(m));
    munmap(reinterpret_cast<void *>(it->first), it->second);
    r.reservations.erase(it);
    return CUDA_SUCCESS;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                     const CUmemAllocationProp *prop, unsigned long long flags) {
    const char *call = "cuMemCreate";
    Context *c = nullptr;
    if (CUresult rc = enter_ctx(call, &c)) return rc;
    if (!handle) return fail(call, CUDA_ERROR_INVALID_VALUE, "handle=NULL");
    if (!prop) return fail(call, CUDA_ERROR_INVALID_VALUE, "prop=NULL");
    if (flags) return fail(call, CUDA_ERROR_INVALID_VALUE, "flags=0x%llx: must be 0", flags);
    if (size == 0 || size % kGranularity)
        return fail(call, CUDA_ERROR_INVALID_VALUE,
                    "size=%zu is not a positive multiple of the granularity %zu", size,
                    kGranularity);
    if (prop->type != CU_MEM_ALLOCATION_TYPE_PINNED)
        return fail(call, CUDA_ERROR_INVALID_VALUE,
                    "prop->type=%d: must be CU_MEM_ALLOCATION_TYPE_PINNED (1)",
                    static_cast<int>(prop->type));
    if (prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return fail(call, CUDA_ERROR_INVALID_VALUE,
                    "prop->location.type=%d: only CU_MEM_LOCATION_TYPE_DEVICE (1) is modelled",
                    static_cast<int>(prop->location.type));
    if (CUresult rc = check_device(call, "prop->location.id", prop->location.id)) return rc;
    if (prop->requestedHandleTypes != CU_MEM_HANDLE_TYPE_NONE &&
        prop->requestedHandleTypes != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return fail(call, CUDA_ERROR_NOT_SUPPORTED,
                    "prop->requestedHandleTypes=0x%x: only CU_MEM_HANDLE_TYPE_NONE or "
                    "CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR exist here",
                    static_cast<unsigned>(prop->requestedHandleTypes));
    int dev = prop->location.id;
    Runtime &r = rt();
    std::unique_lock<std::shared_mutex> lk(r.mem);
    if (CUresult rc = charge(r, call, dev, size)) return rc;
    int fd = device_memfd(dev, size);
    if (fd < 0) {
        r.used[dev] -= size;
        return fail(call, CUDA_ERROR_OUT_OF_MEMORY, "size=%zu: memfd: %s", size, strerror(errno));
    }
    auto *a = new Alloc;
    a->fd = fd;
    a->size = size;
    a->device = dev;
    a->exportable = prop->requestedHandleTypes == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    uint64_t h = r.next_handle++;
    r.handles[h] = a;
    *handle = h;
    return CUDA_SUCCESS;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
    const char *call = "cuMemRelease";
    Context *c = nullptr;
    if (CUresult rc = enter_ctx(call, &c)) return rc;
    Runtime &r = rt();
    std::unique_lock<std::shared_mutex> lk(r.mem);
    Alloc *a = alloc_of(r, handle);
    if (!a)
        return fail(call, CUDA_ERROR_INVALID_VALUE,
                    "handle=0x%llx is not a live allocation handle (released, or never made)",
                    ull(handle));
    r.handles.erase(handle);
    a->released = true;  // the memory stays while mappings of it remain, as in CUDA
    maybe_free(r, a);
    return CUDA_SUCCESS;
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags) {
    const char *call = "cuMemMap";
    Context *c = nullptr;
    if (CUresult rc = enter_ctx(call, &c)) return rc;
    Runtime &r = rt();
    std::unique_lock<std::shared_mutex> lk(r.mem);
    uintptr_t va = static_cast<uintptr_t>(ptr);
    Alloc *a = alloc_of(r, handle);
    if (!a)
        return fail(call, CUDA_ERROR_INVALID_VALUE,
                    "handle=0x%llx is not a live allocation handle (released, or never made)",
                    ull(handle));
    if (flags) return fail(call, CUDA_ERROR_INVALID_VALUE, "flags=0x%llx: must be 0", flags);
    if (offset)
        return fail(call, CUDA_ERROR_INVALID_VALUE, "offset=%zu: must be 0 (as cuda.h says)",
                    offset);
    if (size == 0 || size % kGranularity || va % kGranularity)
        return fail(call, CUDA_ERROR_INVALID_VALUE,
                    "ptr=0x%llx size=%zu: each must be a multiple of the granularity %zu (size > "
                    "0)",
                    ull(ptr), size, kGranularity);
    if (size > a->size)
        return fail(call, CUDA_ERROR_INVALID_VALUE,
                    "size=%zu: past the end of handle=0x%llx (%zu bytes)", size, ull(handle),
                    a->size);
    auto res = reservation_at(r, va);
    if (!res.first || size > res.first + res.second - va)
        return fail(call, CUDA_ERROR_INVALID_VALUE,
                    "ptr=0x%llx size=%zu is not inside one range cuMemAddressReserve returned",
                    ull(ptr), size);
    const Range *at = range_at(r, va);
    uintptr_t next = at ? at->va : first_start_in(r.ranges, va, size);
    if (next)
        return fail(call, CUDA_ERROR_INVALID_VALUE,
                    "ptr=0x%llx size=%zu overlaps the mapping at 0x%llx (cuMemUnmap first)",
                    ull(ptr), size, ull(next));
    char *view;
    if (r.cfg.strict) {
        // The program's view stays PROT_NONE; the stand-in copies through its own alias.
        void *alias = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, a->fd, 0);
        if (alias == MAP_FAILED)
            return fail(call, CUDA_ERROR_OUT_OF_MEMORY, "ptr=0x%llx: mmap: %s", ull(ptr),
                        strerror(errno));
        view = static_cast<char *>(alias);
    } else {
        // Inaccessible until cuMemSetAccess, to the program as to the stand-in's copies.
        if (mmap(reinterpret_cast<void *>(va), size, PROT_NONE, MAP_SHARED | MAP_FIXED, a->fd, 0) ==
            MAP_FAILED)
            return fail(call, CUDA_ERROR_OUT_OF_MEMORY, "ptr=0x%llx: mmap: %s", ull(ptr),
                        strerror(errno));
        view = reinterpret_cast<char *>(va);
    }
    Range rg;
    rg.va = va;
    rg.size = size;
    rg.map_size = size;
    rg.view = view;
    rg.alloc = a;
    rg.device = a->device;
    r.ranges[va] = rg;
    ++a->maps;
    return CUDA_SUCCESS;
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
    const char *call = "cuMemUnmap";
    Context *c = nullptr;
    if (CUresult rc = enter_ctx(call, &c)) return rc;
    Runtime &r = rt();
    std::unique_lock<std::shared_mutex> lk(r.mem);
    std::vector<Range *> spans;
    if (!whole_mappings(r, static_cast<uintptr_t>(ptr), size, &spans))
        return fail(call, CUDA_ERROR_INVALID_VALUE,
                    "ptr=0x%llx size=%zu is not a whole mapped range (cuMemUnmap cannot unmap "
                    "part of a mapping, nor unmapped addresses)",
                    ull(ptr), size);
    for (Range *rg : spans) {
        uintptr_t va = rg->va;
        drop_range(r, *rg);
        r.ranges.erase(va);
    }
    return CUDA_SUCCESS;
}

CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count) {
    const char *call = "cuMemSetAccess";
    Context *c = nullptr;
    if (CUresult rc = enter_ctx(call, &c)) return rc;
    if (!desc || count == 0)
        return fail(call, CUDA_ERROR_INVALID_VALUE, "desc=%p count=%zu: no access given",
                    static_cast<const void *>(desc), count);
    unsigned access = CU_MEM_ACCESS_FLAGS_PROT_NONE;
    for (size_t i = 0; i < count; ++i) {
        if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE)
            return fail(call, CUDA_ERROR_INVALID_VALUE,
                        "desc[%zu].location.type=%d: only CU_MEM_LOCATION_TYPE_DEVICE (1) is "
                        "modelled",
                        i, static_cast<int>(desc[i].location.type));
        char what[48];
        snprintf(what, sizeof what, "desc[%zu].location.id", i);
        if (CUresult rc = check_device(call, what, desc[i].location.id)) return rc;
        unsigned f = static_cast<unsigned>(desc[i].flags);
        if (f != CU_MEM_ACCESS_FLAGS_PROT_NONE && f != CU_MEM_ACCESS_FLAGS_PROT_READ &&
            f != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            return fail(call, CUDA_ERROR_INVALID_VALUE,
                        "desc[%zu].flags=0x%x is not PROT_NONE, PROT_READ or PROT_READWRITE", i, f);
        access |= f;  // copies run on no particular device: the widest grant applies
    }
    Runtime &r = rt();
    std::unique_lock<std::shared_mutex> lk(r.mem);
    std::vector<Range *> spans;
    if (!whole_mappings(r, static_cast<uintptr_t>(ptr), size, &spans))
        return fail(call, CUDA_ERROR_INVALID_VALUE,
                    "ptr=0x%llx size=%zu is not a fully mapped range of whole cuMemMap mappings",
                    ull(ptr), size);
    for (Range *rg : spans) {
        if (!r.cfg.strict &&
            mprotect(reinterpret_cast<void *>(rg->va), rg->map_size, prot_of(access)) != 0)
            return fail(call, CUDA_ERROR_OPERATING_SYSTEM, "ptr=0x%llx: mprotect: %s", ull(rg->va),
                        strerror(errno));
        rg->access = access;
    }
    return CUDA_SUCCESS;
}

// ---- sharing --------------------------------------------------------------------------------

CUresult cuMemExportToShareableHandle(void *shareableHandle, CUmemGenericAllocationHandle handle,
                                      CUmemAllocationHandleType handleType,
                                      unsigned long long flags) {
    const char *call = "cuMemExportToShareableHandle";
    Context *c = nullptr;
    if (CUresult rc = enter_ctx(call, &c)) return rc;
    if (!shareableHandle) return fail(call, CUDA_ERROR_INVALID_VALUE, "shareableHandle=NULL");
    if (handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return fail(call, CUDA_ERROR_INVALID_VALUE,
                    "handleType=0x%x: only CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR (1) is "
                    "modelled",
                    static_cast<unsigned>(handleType));
    if (flags) return fail(call, CUDA_ERROR_INVALID_VALUE, "flags=0x%llx: must be 0", flags);
    Runtime &r = rt();
    std::shared_lock<std::shared_mutex> lk(r.mem);
    Alloc *a = alloc_of(r, handle);
    if (!a)
        return fail(call, CUDA_ERROR_INVALID_VALUE,
                    "handle=0x%llx is not a live allocation handle (released, or never made)",
                    ull(handle));
    if (!a->exportable)
        return fail(call, CUDA_ERROR_INVALID_VALUE,
                    "handle=0x%llx was created without CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR "
                    "in prop->requestedHandleTypes",
                    ull(handle));
    int fd = fcntl(a->fd, F_DUPFD_CLOEXEC, 0);
    if (fd < 0)
        return fail(call, CUDA_ERROR_OUT_OF_MEMORY, "handle=0x%llx: dup: %s", ull(handle),
                    strerror(errno));
    memcpy(shareableHandle, &fd, sizeof fd);  // the caller owns the descriptor
    return CUDA_SUCCESS;
}

CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle, void *osHandle,
                                        CUmemAllocationHandleType shHandleType) {
    const char *call = "cuMemImportFromShareableHandle";
    Context *c = nullptr;
    if (CUresult rc = enter_ctx(call, &c)) return rc;
    if (!handle) return fail(call, CUDA_ERROR_INVALID_VALUE, "handle=NULL");
    if (shHandleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return fail(call, CUDA_ERROR_INVALID_VALUE,
                    "shHandleType=0x%x: only CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR (1) is "
                    "modelled",
                    static_cast<unsigned>(shHandleType));
    uintptr_t raw = reinterpret_cast<uintptr_t>(osHandle);
    if (raw > static_cast<uintptr_t>(INT_MAX))
        return fail(call, CUDA_ERROR_INVALID_VALUE,
                    "osHandle=%p is not a file descriptor passed as (void *)(uintptr_t)fd",
                    osHandle);
    int fd = static_cast<int>(raw);
    // Only a descriptor of the stand-in's device memory: a memfd named after its device.
    char link[64], target[256];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, target, sizeof target - 1);
    target[n > 0 ? n : 0] = '\0';
    std::string prefix = std::string("/memfd:") + kMemfdPrefix;
    struct stat st {};
    if (n <= 0 || strncmp(target, prefix.c_str(), prefix.size()) != 0 || fstat(fd, &st) != 0)
        return fail(call, CUDA_ERROR_INVALID_VALUE,
                    "osHandle=fd %d is not a descriptor cuMemExportToShareableHandle made (%s)", fd,
                    n > 0 ? target : "not an open descriptor");
    int phys = atoi(target + prefix.size());
    int dev = -1;
    for (int d = 0; d < device_count(); ++d) {
        if (rt().cfg.visible[d] == phys) dev = d;
    }
    int mine = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (mine < 0)
        return fail(call, CUDA_ERROR_OUT_OF_MEMORY, "osHandle=fd %d: dup: %s", fd, strerror(errno));
    Runtime &r = rt();
    std::unique_lock<std::shared_mutex> lk(r.mem);
    auto *a = new Alloc;
    a->fd = mine;
    a->size = static_cast<size_t>(st.st_size);
    a->device = dev;
    a->imported = true;
    a->exportable = true;
    uint64_t h = r.next_handle++;
    r.handles[h] = a;
    *handle = h;
    return CUDA_SUCCESS;
}

// ---- plain allocations ----------------------------------------------------------------------

CUresult cuMemAlloc(CUdeviceptr *dptr, size_t bytesize) {
    const char *call = "cuMemAlloc";
    Context *c = nullptr;
    if (CUresult rc = enter_ctx(call, &c)) return rc;
    if (!dptr) return fail(call, CUDA_ERROR_INVALID_VALUE, "dptr=NULL");
    if (bytesize == 0) return fail(call, CUDA_ERROR_INVALID_VALUE, "bytesize=0");
    if (bytesize > SIZE_MAX - kGranularity)
        return fail(call, CUDA_ERROR_OUT_OF_MEMORY, "bytesize=%zu: too large", bytesize);
    size_t map_size = round_up(bytesize, kPage);
    Runtime &r = rt();
    std::unique_lock<std::shared_mutex> lk(r.mem);
    if (CUresult rc = charge(r, call, c->device, map_size)) return rc;
    int fd = device_memfd(c->device, map_size);
    void *va = MAP_FAILED;
    void *view = MAP_FAILED;
    if (fd >= 0) {
        if (r.cfg.strict) {
            va = mmap(nullptr, map_size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
                      0);
            view = mmap(nullptr, map_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        } else {
            va = view = mmap(nullptr, map_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        }
    }
    int err = errno;
    if (fd >= 0) close(fd);
    if (va == MAP_FAILED || view == MAP_FAILED) {
        if (va != MAP_FAILED) munmap(va, map_size);
        if (view != MAP_FAILED && view != va) munmap(view, map_size);
        r.used[c->device] -= map_size;
        return fail(call, CUDA_ERROR_OUT_OF_MEMORY, "bytesize=%zu: %s", bytesize, strerror(err));
    }
    Range rg;
    rg.va = reinterpret_cast<uintptr_t>(va);
    rg.size = bytesize;
    rg.map_size = map_size;
    rg.view = static_cast<char *>(view);
    rg.device = c->device;
    rg.access = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    r.ranges[rg.va] = rg;
    *dptr = rg.va;
    return CUDA_SUCCESS;
}

CUresult cuMemFree(CUdeviceptr dptr) {
    const char *call = "cuMemFree";
    Context *c = nullptr;
    if (CUresult rc = enter_ctx(call, &c)) return rc;
    Runtime &r = rt();
    std::unique_lock<std::shared_mutex> lk(r.mem);
    auto it = r.ranges.find(static_cast<uintptr_t>(dptr));
    if (!dptr || it == r.ranges.end() || it->second.alloc)
        return fail(call, CUDA_ERROR_INVALID_VALUE,
                    "dptr=0x%llx is not an address cuMemAlloc returned", ull(dptr));
    drop_range(r, it->second);
    r.ranges.erase(it);
    return CUDA_SUCCESS;
}

// ---- copies ---------------------------------------------------------------------------------

CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount) {
    const char *call = "cuMemcpy";
    Context *c = nullptr;
    if (CUresult rc = enter_ctx(call, &c)) return rc;
    {
        Runtime &r = rt();
        std::shared_lock<std::shared_mutex> lk(r.mem);
        std::vector<Piece> d, s;
        if (ByteCount) {
            if (CUresult rc =
                    resolve(r, call, "dst", dst, ByteCount, Use::write, false, &d, nullptr))
                return rc;
            if (CUresult rc =
                    resolve(r, call, "src", src, ByteCount, Use::read, false, &s, nullptr))
                return rc;
        }
    }
    // Synchronous, and ordered like the legacy default stream.
    return run_legacy(call, c, [call, dst, src, ByteCount](std::string *) {
        return do_copy(call, dst, src, ByteCount, nullptr);
    });
}

CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream) {
    const char *call = "cuMemcpyAsync";
    Context *c = nullptr;
    if (CUresult rc = enter_ctx(call, &c)) return rc;
    if (ByteCount) {
        Runtime &r = rt();
        std::shared_lock<std::shared_mutex> lk(r.mem);
        std::vector<Piece> d, s;
        if (CUresult rc = resolve(r, call, "dst", dst, ByteCount, Use::write, false, &d, nullptr))
            return rc;
        if (CUresult rc = resolve(r, call, "src", src, ByteCount, Use::read, false, &s, nullptr))
            return rc;
    }
    std::shared_ptr<Stream> st;
    if (CUresult rc = get_stream(call, hStream, c, &st, true)) return rc;
    // Checked again when the stream reaches it: the memory may be gone by then.
    enqueue(st, [call, dst, src, ByteCount](std::string *msg) {
        return do_copy(call, dst, src, ByteCount, msg);
    });
    return CUDA_SUCCESS;
}

CUresult cuMemsetD8(CUdeviceptr dstDevice, unsigned char uc, size_t N) {
    const char *call = "cuMemsetD8";
    Context *c = nullptr;
    if (CUresult rc = enter_ctx(call, &c)) return rc;
    if (N) {
        Runtime &r = rt();
        std::shared_lock<std::shared_mutex> lk(r.mem);
        std::vector<Piece> d;
        if (CUresult rc =
                resolve(r, call, "dstDevice", dstDevice, N, Use::write, true, &d, nullptr))
            return rc;
    }
    return run_legacy(call, c, [call, dstDevice, uc, N](std::string *) {
        return do_set(call, dstDevice, uc, N, nullptr);
    });
}

CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream) {
    const char *call = "cuMemsetD8Async";
    Context *c = nullptr;
    if (CUresult rc = enter_ctx(call, &c)) return rc;
    if (N) {
        Runtime &r = rt();
        std::shared_lock<std::shared_mutex> lk(r.mem);
        std::vector<Piece> d;
        if (CUresult rc =
                resolve(r, call, "dstDevice", dstDevice, N, Use::write, true, &d, nullptr))
            return rc;
    }
    std::shared_ptr<Stream> st;
    if (CUresult rc = get_stream(call, hStream, c, &st, true)) return rc;
    enqueue(st, [call, dstDevice, uc, N](std::string *msg) {
        return do_set(call, dstDevice, uc, N, msg);
    });
    return CUDA_SUCCESS;
}

// ---- streams --------------------------------------------------------------------------------

CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags) {
    const char *call = "cuStreamCreate";
    Context *c = nullptr;
    if (CUresult rc = enter_ctx(call, &c)) return rc;
    if (!phStream) return fail(call, CUDA_ERROR_INVALID_VALUE, "phStream=NULL");
    if (Flags != CU_STREAM_DEFAULT && Flags != CU_STREAM_NON_BLOCKING)
        return fail(call, CUDA_ERROR_INVALID_VALUE,
                    "Flags=0x%x: must be CU_STREAM_DEFAULT or CU_STREAM_NON_BLOCKING", Flags);
    auto s = start_stream(c, Flags == CU_STREAM_DEFAULT, false);
    if (!s) return fail(call, CUDA_ERROR_OUT_OF_MEMORY, "cannot start the stream's thread");
    Runtime &r = rt();
    std::lock_guard<std::mutex> lk(r.mu);
    r.streams[s.get()] = s;
    *phStream = reinterpret_cast<CUstream>(s.get());
    return CUDA_SUCCESS;
}

CUresult cuStreamDestroy(CUstream hStream) {
    const char *call = "cuStreamDestroy";
    Context *c = nullptr;
    if (CUresult rc = enter_ctx(call, &c)) return rc;
    if (!hStream)
        return fail(call, CUDA_ERROR_INVALID_HANDLE,
                    "hStream=NULL: the legacy default stream cannot be destroyed");
    Runtime &r = rt();
    std::shared_ptr<Stream> s;
    {
        std::lock_guard<std::mutex> lk(r.mu);
        auto it = r.streams.find(hStream);
        if (it == r.streams.end())
            return fail(call, CUDA_ERROR_INVALID_HANDLE,
                        "hStream=%p is not a live stream (destroyed, or never created)",
                        static_cast<void *>(hStream));
        s = it->second;
        r.streams.erase(it);
    }
    // CUDA returns at once and the queued work still runs: the worker drains its queue, then
    // ends; cuCtxSynchronize waits for it.
    {
        std::lock_guard<std::mutex> lk(s->mu);
        s->stop = true;
    }
    s->cv.notify_all();
    std::lock_guard<std::mutex> lk(r.mu);
    r.retired.push_back(s);
    return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream hStream) {
    const char *call = "cuStreamSynchronize";
    Context *c = nullptr;
    if (CUresult rc = enter_ctx(call, &c)) return rc;
    std::shared_ptr<Stream> s;
    if (CUresult rc = get_stream(call, hStream, c, &s)) return rc;
    return sync_stream(s.get());
}

CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData) {
    const char *call = "cuLaunchHostFunc";
    Context *c = nullptr;
    if (CUresult rc = enter_ctx(call, &c)) return rc;
    if (!fn) return fail(call, CUDA_ERROR_INVALID_VALUE, "fn=NULL");
    std::shared_ptr<Stream> s;
    if (CUresult rc = get_stream(call, hStream, c, &s, true)) return rc;
    enqueue(s, [fn, userData](std::string *) {
        t_in_host_fn = true;
        fn(userData);
        t_in_host_fn = false;
        return CUDA_SUCCESS;
    });
    return CUDA_SUCCESS;
}

CUresult cuStreamWriteValue32(CUstream stream, CUdeviceptr addr, cuuint32_t value,
                              unsigned int flags) {
    return write_value("cuStreamWriteValue32", stream, addr, value, flags, 4);
}

CUresult cuStreamWaitValue32(CUstream stream, CUdeviceptr addr, cuuint32_t value,
                             unsigned int flags) {
    return wait_value("cuStreamWaitValue32", stream, addr, value, flags, 4);
}

CUresult cuStreamWriteValue64(CUstream stream, CUdeviceptr addr, cuuint64_t value,
                              unsigned int flags) {
    return write_value("cuStreamWriteValue64", stream, addr, value, flags, 8);
}

CUresult cuStreamWaitValue64(CUstream stream, CUdeviceptr addr, cuuint64_t value,
                             unsigned int flags) {
    return wait_value("cuStreamWaitValue64", stream, addr, value, flags, 8);
}

// ---- modules and kernels ------------------------------------------------------------------------

CUresult cuModuleLoadData(CUmodule *module, const void *image) {
    const char *call = "cuModuleLoadData";
    Context *c = nullptr;
    if (CUresult rc = enter_ctx(call, &c)) return rc;
    if (!module) return fail(call, CUDA_ERROR_INVALID_VALUE, "module=NULL");
    if (!image) return fail(call, CUDA_ERROR_INVALID_VALUE, "image=NULL");
    const unsigned char *bytes = static_cast<const unsigned char *>(image);
    if (bytes[0] == 0x7f && bytes[1] == 'E' && bytes[2] == 'L' && bytes[3] == 'F')
        return fail(call, CUDA_ERROR_NOT_SUPPORTED,
                    "image is a cubin (ELF): the stand-in loads PTX text only");
    auto m = std::make_unique<Module>();
    m->ctx = c;
    std::string why;
    if (!read_entries(static_cast<const char *>(image), &m->kernels, &why))
        return fail(call, CUDA_ERROR_INVALID_PTX, "image: %s", why.c_str());
    Runtime &r = rt();
    std::lock_guard<std::mutex> lk(r.mu);
    for (const auto &k : m->kernels) r.kernels.insert(k.get());
    *module = reinterpret_cast<CUmodule>(m.get());
    r.modules.insert(m.release());
    return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name) {
    const char *call = "cuModuleGetFunction";
    Context *c = nullptr;
    if (CUresult rc = enter_ctx(call, &c)) return rc;
    if (!hfunc) return fail(call, CUDA_ERROR_INVALID_VALUE, "hfunc=NULL");
    if (!name) return fail(call, CUDA_ERROR_INVALID_VALUE, "name=NULL");
    Runtime &r = rt();
    std::lock_guard<std::mutex> lk(r.mu);
    Module *m = reinterpret_cast<Module *>(hmod);
    if (!r.modules.count(m))
        return fail(call, CUDA_ERROR_INVALID_HANDLE, "hmod=%p is not a loaded module",
                    static_cast<void *>(hmod));
    if (m->ctx != c)
        return fail(call, CUDA_ERROR_INVALID_CONTEXT, "hmod=%p was loaded into another context",
                    static_cast<void *>(hmod));
    for (const auto &k : m->kernels) {
        if (k->name == name) {
            *hfunc = reinterpret_cast<CUfunction>(k.get());
            return CUDA_SUCCESS;
        }
    }
    return fail(call, CUDA_ERROR_NOT_FOUND, "name=\"%s\": no .entry of that name in the module",
                name);
}

CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                        unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                        unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                        void **kernelParams, void **extra) {
    const char *call = "cuLaunchKernel";
    Context *c = nullptr;
    if (CUresult rc = enter_ctx(call, &c)) return rc;
    const Kernel *k = reinterpret_cast<const Kernel *>(f);
    Runtime &r = rt();
    {
        std::lock_guard<std::mutex> lk(r.mu);
        if (!r.kernels.count(k))
            return fail(call, CUDA_ERROR_INVALID_HANDLE, "f=%p is not a kernel of a loaded module",
                        static_cast<void *>(f));
    }
    if (!gridDimX || !gridDimY || !gridDimZ || !blockDimX || !blockDimY || !blockDimZ)
        return fail(call, CUDA_ERROR_INVALID_VALUE,
                    "a zero grid or block dimension (%u,%u,%u)x(%u,%u,%u)", gridDimX, gridDimY,
                    gridDimZ, blockDimX, blockDimY, blockDimZ);
    if (uint64_t{blockDimX} * blockDimY * blockDimZ > 1024)
        return fail(call, CUDA_ERROR_INVALID_VALUE, "block (%u,%u,%u): more than 1024 threads",
                    blockDimX, blockDimY, blockDimZ);
    if (extra)
        return fail(call, CUDA_ERROR_INVALID_VALUE,
                    "extra=%p: the stand-in takes kernelParams only", static_cast<void *>(extra));
    if (!kernelParams && !k->params.empty())
        return fail(call, CUDA_ERROR_INVALID_VALUE,
                    "kernelParams=NULL for kernel %s of %zu parameters", k->name.c_str(),
                    k->params.size());
    const KernelModel *m = model_of(*k);
    if (!m)
        return fail(call, CUDA_ERROR_NOT_SUPPORTED,
                    "kernel %s: the stand-in runs no GPU code, only its models of the library's "
                    "stream kernels",
                    k->name.c_str());
    if (gridDimX * gridDimY * gridDimZ != 1 || blockDimX * blockDimY * blockDimZ != 1 ||
        sharedMemBytes)
        return fail(call, CUDA_ERROR_NOT_SUPPORTED,
                    "kernel %s: the stand-in's model runs one thread of one block with no shared "
                    "memory, not (%u,%u,%u)x(%u,%u,%u) with %u bytes",
                    k->name.c_str(), gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                    sharedMemBytes);
    // The driver reads the parameters before returning: so does the stand-in.
    std::vector<char> args;
    for (size_t i = 0; i < k->params.size(); i++) {
        size_t at = args.size();
        args.resize(at + k->params[i]);
        if (!kernelParams[i])
            return fail(call, CUDA_ERROR_INVALID_VALUE, "kernelParams[%zu]=NULL", i);
        memcpy(args.data() + at, kernelParams[i], k->params[i]);
    }
    std::string refused = m->check(args);
    if (!refused.empty())
        return fail(call, CUDA_ERROR_INVALID_VALUE, "kernel %s: %s", k->name.c_str(),
                    refused.c_str());
    std::shared_ptr<Stream> s;
    if (CUresult rc = get_stream(call, hStream, c, &s, true)) return rc;
    uint64_t timeout_s = r.cfg.wait_timeout_s;
    auto run = m->run;
    enqueue(s, [call, args, timeout_s, run](std::string *msg) {
        return run(call, args, timeout_s, msg);
    });
    return CUDA_SUCCESS;
}

}  // extern "C"
