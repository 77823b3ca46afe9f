// acl_standin.cc: a stand-in of CANN's ACL runtime (libascendcl.so) for the tests, over host
// memory. It owns devices and their contexts, device memory (memfd objects mapped into
// reserved address ranges), sharing of that memory between processes (an abstract Unix socket
// per exporting process, the memfd passed with SCM_RIGHTS), streams (one in-order worker thread
// each), events, and fault injection. It models what ACL documents, refuses misuse loudly (the
// code, one `acl stand-in:` line on stderr, aclGetRecentErrMsg), and must never be installed or
// linked by the library: the library finds it at run time like the real one.
//
// Variables (read at aclInit): ACL_STANDIN_DEVICES (8; ASCEND_RT_VISIBLE_DEVICES selects among
// them as with ACL), ACL_STANDIN_HBM_BYTES (16 GiB per device, per process), ACL_STANDIN_STRICT (0;
// 1 keeps device memory PROT_NONE to the program, fixed by the first aclInit),
// ACL_STANDIN_FAIL=<call>[:<nth>][,...].
#include "acl_standin.h"
#include "standin_util.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
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
#include <vector>

namespace {

using standin::first_start_in;
using standin::make_memfd;
using standin::parse_size;
using standin::reserve_range;
using standin::round_up;
using standin::unmap_to_reserved;

constexpr size_t kGranularity = size_t{2} << 20;  // HBM huge pages
constexpr size_t kPage = 4096;
constexpr int32_t kMaxDevices = 64;
constexpr int kSocketTimeoutSec = 5;
constexpr uint32_t kRequestMagic = 0x41434c53;  // "ACLS"

// ---- errors ---------------------------------------------------------------------------------

thread_local std::string t_err;       // this thread's last error, not yet read
thread_local std::string t_err_read;  // the text aclGetRecentErrMsg returned last

const char *code_name(aclError code) {
    switch (code) {
    case ACL_SUCCESS: return "ACL_SUCCESS";
    case ACL_ERROR_INVALID_PARAM: return "ACL_ERROR_INVALID_PARAM";
    case ACL_ERROR_UNINITIALIZE: return "ACL_ERROR_UNINITIALIZE";
    case ACL_ERROR_REPEAT_INITIALIZE: return "ACL_ERROR_REPEAT_INITIALIZE";
    case ACL_ERROR_REPEAT_FINALIZE: return "ACL_ERROR_REPEAT_FINALIZE";
    case ACL_ERROR_INVALID_DEVICE: return "ACL_ERROR_INVALID_DEVICE";
    case ACL_ERROR_RT_PARAM_INVALID: return "ACL_ERROR_RT_PARAM_INVALID";
    case ACL_ERROR_RT_INVALID_DEVICEID: return "ACL_ERROR_RT_INVALID_DEVICEID";
    case ACL_ERROR_RT_CONTEXT_NULL: return "ACL_ERROR_RT_CONTEXT_NULL";
    case ACL_ERROR_RT_STREAM_CONTEXT: return "ACL_ERROR_RT_STREAM_CONTEXT";
    case ACL_ERROR_RT_INVALID_HANDLE: return "ACL_ERROR_RT_INVALID_HANDLE";
    case ACL_ERROR_RT_WAIT_TIMEOUT: return "ACL_ERROR_RT_WAIT_TIMEOUT";
    case ACL_ERROR_RT_FEATURE_NOT_SUPPORT: return "ACL_ERROR_RT_FEATURE_NOT_SUPPORT";
    case ACL_ERROR_RT_MEMORY_ALLOCATION: return "ACL_ERROR_RT_MEMORY_ALLOCATION";
    case ACL_ERROR_RT_NO_DEVICE: return "ACL_ERROR_RT_NO_DEVICE";
    case ACL_ERROR_RT_NO_PERMISSION: return "ACL_ERROR_RT_NO_PERMISSION";
    default: return "unknown code";
    }
}

std::string record(const char *call, aclError code, const char *fmt, va_list ap) {
    char text[640];
    vsnprintf(text, sizeof text, fmt, ap);
    std::string msg =
        std::string(call) + ": " + text + " (" + code_name(code) + " " + std::to_string(code) + ")";
    t_err = msg;
    return msg;
}

// Misuse or failure of `call`: one line on stderr, the thread's recent message, the code.
__attribute__((format(printf, 3, 4))) aclError fail(const char *call, aclError code,
                                                    const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    std::string msg = record(call, code, fmt, ap);
    va_end(ap);
    fprintf(stderr, "acl stand-in: %s\n", msg.c_str());
    return code;
}

// An answer that callers expect in normal use (a query with nothing to report, a wait that
// timed out, a second aclInit): the code and the recent message, nothing on stderr.
__attribute__((format(printf, 3, 4))) aclError quiet(const char *call, aclError code,
                                                     const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    record(call, code, fmt, ap);
    va_end(ap);
    return code;
}

// ---- configuration --------------------------------------------------------------------------

const char *const kCalls[] = {
    "aclInit",
    "aclFinalize",
    "aclrtGetDeviceCount",
    "aclrtGetDevice",
    "aclrtSetDevice",
    "aclrtResetDevice",
    "aclrtGetCurrentContext",
    "aclrtSetCurrentContext",
    "aclrtDeviceGetBareTgid",
    "aclrtDeviceCanAccessPeer",
    "aclrtDeviceEnablePeerAccess",
    "aclrtMemGetAllocationGranularity",
    "aclrtReserveMemAddress",
    "aclrtReleaseMemAddress",
    "aclrtMallocPhysical",
    "aclrtFreePhysical",
    "aclrtMapMem",
    "aclrtUnmapMem",
    "aclrtMemExportToShareableHandle",
    "aclrtMemSetPidToShareableHandle",
    "aclrtMemImportFromShareableHandle",
    "aclrtIpcMemGetExportKey",
    "aclrtIpcMemSetImportPid",
    "aclrtIpcMemImportByKey",
    "aclrtIpcMemClose",
    "aclrtMemGetAddressRange",
    "aclrtMalloc",
    "aclrtFree",
    "aclrtMallocHost",
    "aclrtFreeHost",
    "aclrtMemcpy",
    "aclrtMemcpyAsync",
    "aclrtMemset",
    "aclrtMemsetAsync",
    "aclrtCreateStream",
    "aclrtDestroyStream",
    "aclrtSynchronizeStream",
    "aclrtSynchronizeStreamWithTimeout",
    "aclrtSynchronizeDeviceWithTimeout",
    "aclrtCreateEvent",
    "aclrtDestroyEvent",
    "aclrtRecordEvent",
    "aclrtStreamWaitEvent",
    "aclrtSynchronizeEvent",
    "aclrtLaunchHostFunc",
};

struct Fault {
    std::string call;
    uint64_t nth = 1;
    uint64_t seen = 0;
};

struct Config {
    int32_t devices = 8;
    uint64_t hbm_bytes = uint64_t{16} << 30;
    bool strict = false;
    std::vector<Fault> faults;
};

// Reads the variables; on a bad value fails aclInit naming the variable and its value.
aclError read_config(Config *cfg) {
    const char *call = "aclInit";
    Config c;
    if (const char *v = getenv("ACL_STANDIN_DEVICES")) {
        uint64_t n = 0;
        if (!parse_size(v, &n) || n > static_cast<uint64_t>(kMaxDevices))
            return fail(call, ACL_ERROR_INVALID_PARAM,
                        "ACL_STANDIN_DEVICES=\"%s\": expected a count from 0 to %d", v,
                        kMaxDevices);
        c.devices = static_cast<int32_t>(n);
    }
    // As ACL does, ASCEND_RT_VISIBLE_DEVICES picks the devices the process sees, numbered from 0
    // in its order.
    if (const char *v = getenv("ASCEND_RT_VISIBLE_DEVICES")) {
        std::string list(v);
        std::set<uint64_t> seen;
        size_t at = 0;
        while (!list.empty()) {
            size_t comma = list.find(',', at);
            std::string item = list.substr(at, comma == std::string::npos ? comma : comma - at);
            uint64_t id = 0;
            if (!parse_size(item.c_str(), &id) ||
                item.find_first_not_of("0123456789") != std::string::npos ||
                id >= static_cast<uint64_t>(c.devices) || !seen.insert(id).second)
                return fail(
                    call, ACL_ERROR_INVALID_PARAM,
                    "ASCEND_RT_VISIBLE_DEVICES=\"%s\": \"%s\" is not one of devices 0 to %d "
                    "(each once)",
                    v, item.c_str(), c.devices - 1);
            if (comma == std::string::npos) break;
            at = comma + 1;
        }
        c.devices = static_cast<int32_t>(seen.size());
    }
    if (const char *v = getenv("ACL_STANDIN_HBM_BYTES")) {
        if (!parse_size(v, &c.hbm_bytes))
            return fail(call, ACL_ERROR_INVALID_PARAM,
                        "ACL_STANDIN_HBM_BYTES=\"%s\": expected a byte count (suffix K, M or G "
                        "allowed)",
                        v);
    }
    if (const char *v = getenv("ACL_STANDIN_STRICT")) {
        if (strcmp(v, "0") && strcmp(v, "1") && *v)
            return fail(call, ACL_ERROR_INVALID_PARAM, "ACL_STANDIN_STRICT=\"%s\": expected 0 or 1",
                        v);
        c.strict = strcmp(v, "1") == 0;
    }
    if (const char *v = getenv("ACL_STANDIN_FAIL")) {
        std::string all(v);
        size_t at = 0;
        while (at <= all.size() && !all.empty()) {
            size_t comma = all.find(',', at);
            std::string item = all.substr(at, comma == std::string::npos ? comma : comma - at);
            Fault f;
            size_t colon = item.find(':');
            f.call = item.substr(0, colon);
            bool known = false;
            for (const char *name : kCalls) known = known || f.call == name;
            if (!known)
                return fail(call, ACL_ERROR_INVALID_PARAM,
                            "ACL_STANDIN_FAIL=\"%s\": \"%s\" is not an ACL call of the stand-in", v,
                            f.call.c_str());
            if (colon != std::string::npos) {
                std::string nth = item.substr(colon + 1);
                if (!parse_size(nth.c_str(), &f.nth) || f.nth == 0 ||
                    nth.find_first_not_of("0123456789") != std::string::npos)
                    return fail(call, ACL_ERROR_INVALID_PARAM,
                                "ACL_STANDIN_FAIL=\"%s\": \"%s\" is not a call number (1 is the "
                                "first call)",
                                v, nth.c_str());
            }
            c.faults.push_back(f);
            if (comma == std::string::npos) break;
            at = comma + 1;
        }
    }
    *cfg = c;
    return ACL_SUCCESS;
}

// ---- state ----------------------------------------------------------------------------------

struct Stream;
struct Event;

// A device's default context. A context object is never freed: a thread may still hold a
// pointer to one that aclrtResetDevice deactivated, and that must read as "no context".
struct Context {
    int32_t device = 0;
    std::atomic<bool> active{true};
    std::shared_ptr<Stream> def;  // the default stream, started at first use
    std::set<int32_t> peers;      // aclrtDeviceEnablePeerAccess
};

// A task returns its code and, on failure, the message to keep with it.
using Task = std::function<aclError(std::string *msg)>;

// An in-order queue of tasks run by one worker thread.
struct Stream {
    Context *ctx = nullptr;
    std::mutex mu;
    std::condition_variable cv;
    std::deque<Task> queue;
    uint64_t enqueued = 0;
    uint64_t done = 0;
    aclError first_err = ACL_SUCCESS;
    std::string first_msg;
    bool stop = false;
    std::thread worker;
    std::thread::id worker_id;
};

struct Event {
    std::mutex mu;
    std::condition_variable cv;
    uint64_t records = 0;    // records enqueued
    uint64_t completed = 0;  // the latest record a stream has reached
};

// Physical memory: a memfd, made here (aclrtMallocPhysical) or received (import).
struct Phys {
    int fd = -1;
    size_t size = 0;
    int32_t device = 0;
    bool imported = false;
    int maps = 0;
    int refs = 1;  // the allocation (or import) and each aclrtMemRetainAllocationHandle
    uint64_t shareable = 0;
};

// A device block: a mapped range (aclrtMapMem) or an aclrtMalloc block. `view` is where this
// library reads and writes it: the device address itself, or in strict mode a private alias.
struct Range {
    uintptr_t va = 0;
    size_t size = 0;      // bytes a copy may touch
    size_t map_size = 0;  // bytes mapped (aclrtMalloc rounds up to pages)
    char *view = nullptr;
    Phys *phys = nullptr;  // null for an aclrtMalloc block
    int32_t device = 0;
    int fd = -1;          // an aclrtMalloc block's memfd (kept for aclrtIpcMemGetExportKey)
    Phys *ipc = nullptr;  // an aclrtMalloc block's IPC export (its own reference to the memfd)
    std::string ipc_key;  // a block aclrtIpcMemImportByKey mapped: the key it imported
};

struct Export {
    Phys *phys = nullptr;
    std::set<pid_t> allowed;
    bool any_pid = false;
};

struct Runtime {
    // Initialisation, devices, contexts, streams, events.
    std::mutex mu;
    std::atomic<bool> initialized{false};
    bool ever_initialized = false;
    bool strict_fixed = false;
    Config cfg;
    Context *dev_ctx[kMaxDevices] = {};
    int refs[kMaxDevices] = {};
    std::set<Context *> contexts;
    std::unordered_map<void *, std::shared_ptr<Stream>> streams;
    std::unordered_map<void *, std::shared_ptr<Event>> events;

    // Fault counters (cfg.faults); any_fault spares every call the lock when there are none.
    std::mutex fault_mu;
    std::atomic<bool> any_fault{false};

    // Memory: held shared by every copy, exclusively by whatever changes the maps below.
    std::shared_mutex mem;
    std::map<uintptr_t, Range> ranges;
    std::map<uintptr_t, size_t> reservations;
    std::set<Phys *> phys;
    std::map<uint32_t, Export> exports;
    std::map<void *, size_t> host_blocks;
    std::map<std::string, uintptr_t> ipc_imports;  // key -> the block it is mapped at
    uint64_t used[kMaxDevices] = {};
    uint32_t next_serial = 1;
    int listen_fd = -1;
    pid_t server_pid = 0;
};

// A child of fork keeps none of the parent's threads: it must not wait on the parent's streams,
// nor hold the parent's listening socket (its name would outlive the parent).
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
    for (Context *c : r.contexts) {
        if (c->def) new std::shared_ptr<Stream>(c->def);
        c->def.reset();
    }
    if (r.listen_fd >= 0) close(r.listen_fd);
    r.listen_fd = -1;
    r.server_pid = 0;
    // The child's only thread holds both locks; fresh locks are the portable way out (a
    // read-write lock unlocked by another thread id is undefined, and hangs in glibc).
    new (&r.mem) std::shared_mutex;
    new (&r.fault_mu) std::mutex;
    new (&r.mu) std::mutex;
}

thread_local Context *t_ctx = nullptr;

Context *current() {
    Context *c = t_ctx;
    return c && c->active.load() ? c : nullptr;
}

// Every call but aclInit: ACL is initialised, and the call is not one ACL_STANDIN_FAIL fails.
aclError enter(const char *call) {
    Runtime &r = rt();
    if (!r.initialized.load())
        return fail(call, ACL_ERROR_UNINITIALIZE, "called before aclInit (or after aclFinalize)");
    if (!r.any_fault.load()) return ACL_SUCCESS;
    std::lock_guard<std::mutex> lk(r.fault_mu);
    for (Fault &f : r.cfg.faults) {
        if (f.call != call || ++f.seen != f.nth) continue;
        aclError code = ACL_ERROR_RT_PARAM_INVALID;
        if (f.call == "aclrtMallocPhysical" || f.call == "aclrtMalloc" ||
            f.call == "aclrtMallocHost")
            code = ACL_ERROR_RT_MEMORY_ALLOCATION;
        else if (f.call == "aclrtMemImportFromShareableHandle" ||
                 f.call == "aclrtIpcMemImportByKey")
            code = ACL_ERROR_RT_INVALID_HANDLE;
        return fail(call, code, "failure injected at call %llu (ACL_STANDIN_FAIL)",
                    static_cast<unsigned long long>(f.nth));
    }
    return ACL_SUCCESS;
}

// enter() and a current context on this thread.
aclError enter_ctx(const char *call, Context **ctx) {
    if (aclError rc = enter(call)) return rc;
    Context *c = current();
    if (!c)
        return fail(call, ACL_ERROR_RT_CONTEXT_NULL,
                    "this thread has no current context (aclrtSetDevice or "
                    "aclrtSetCurrentContext first)");
    *ctx = c;
    return ACL_SUCCESS;
}

aclError check_device(const char *call, const char *what, int32_t id) {
    int32_t n = rt().cfg.devices;
    if (n == 0) return fail(call, ACL_ERROR_RT_NO_DEVICE, "%s=%d: there is no device", what, id);
    if (id < 0 || id >= n)
        return fail(call, ACL_ERROR_RT_INVALID_DEVICEID, "%s=%d: devices are 0 to %d", what, id,
                    n - 1);
    return ACL_SUCCESS;
}

// ---- streams --------------------------------------------------------------------------------

void run_stream(Stream *s) {
    t_ctx = s->ctx;  // host functions may call ACL with the stream's context
    std::unique_lock<std::mutex> lk(s->mu);
    for (;;) {
        s->cv.wait(lk, [s] { return s->stop || !s->queue.empty(); });
        if (s->queue.empty()) return;  // stopped and drained
        Task task = std::move(s->queue.front());
        s->queue.pop_front();
        lk.unlock();
        std::string msg;
        aclError rc = task(&msg);
        lk.lock();
        if (rc != ACL_SUCCESS && s->first_err == ACL_SUCCESS) {
            s->first_err = rc;
            s->first_msg = msg;
        }
        ++s->done;
        s->cv.notify_all();
    }
}

// A new stream and its worker; null when no thread can be started (no exception may cross
// the C interface).
std::shared_ptr<Stream> start_stream(Context *ctx) {
    auto s = std::make_shared<Stream>();
    s->ctx = ctx;
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

void enqueue(Stream *s, Task task) {
    {
        std::lock_guard<std::mutex> lk(s->mu);
        s->queue.push_back(std::move(task));
        ++s->enqueued;
    }
    s->cv.notify_all();
}

// The stream a handle names: NULL is the current context's default stream. Work is enqueued
// only on a stream of the current context (`enqueue_on`), as ACL requires.
aclError get_stream(const char *call, aclrtStream handle, Context *ctx,
                    std::shared_ptr<Stream> *out, bool enqueue_on = false) {
    Runtime &r = rt();
    std::lock_guard<std::mutex> lk(r.mu);
    if (!handle) {
        if (!ctx->def) ctx->def = start_stream(ctx);
        if (!ctx->def)
            return fail(call, ACL_ERROR_RT_MEMORY_ALLOCATION,
                        "stream=NULL: cannot start the default stream's thread");
        *out = ctx->def;
        return ACL_SUCCESS;
    }
    auto it = r.streams.find(handle);
    if (it == r.streams.end())
        return fail(call, ACL_ERROR_RT_STREAM_CONTEXT,
                    "stream=%p is not a live stream (destroyed, never created, or made before "
                    "fork by the parent)",
                    handle);
    if (enqueue_on && it->second->ctx != ctx)
        return fail(call, ACL_ERROR_RT_STREAM_CONTEXT,
                    "stream=%p belongs to device %d's context, not to the current one (device %d)",
                    handle, it->second->ctx->device, ctx->device);
    *out = it->second;
    return ACL_SUCCESS;
}

// Waits until the tasks enqueued so far have run; timeout_ms -1 waits for ever.
aclError sync_stream(const char *call, Stream *s, int32_t timeout_ms) {
    if (std::this_thread::get_id() == s->worker_id)
        return fail(call, ACL_ERROR_RT_PARAM_INVALID,
                    "called from a host function of the same stream: it would wait for itself");
    std::unique_lock<std::mutex> lk(s->mu);
    uint64_t target = s->enqueued;
    auto reached = [s, target] { return s->done >= target; };
    if (timeout_ms < 0) {
        s->cv.wait(lk, reached);
    } else if (!s->cv.wait_for(lk, std::chrono::milliseconds(timeout_ms), reached)) {
        return quiet(call, ACL_ERROR_RT_WAIT_TIMEOUT, "timeout=%d ms: %llu task(s) still to run",
                     timeout_ms, static_cast<unsigned long long>(target - s->done));
    }
    aclError rc = s->first_err;
    if (rc != ACL_SUCCESS) {
        t_err = s->first_msg;
        s->first_err = ACL_SUCCESS;
        s->first_msg.clear();
    }
    return rc;
}

// Whether this thread is the worker of one of the context's streams (r.mu held).
bool on_worker_of(Runtime &r, Context *c) {
    std::thread::id me = std::this_thread::get_id();
    if (!c) return false;
    if (c->def && c->def->worker_id == me) return true;
    for (auto &s : r.streams) {
        if (s.second->ctx == c && s.second->worker_id == me) return true;
    }
    return false;
}

// Deactivates a device's context and stops its streams (aclrtResetDevice's last reference,
// aclFinalize). Called with r.mu held; returns the streams to stop once it is released.
std::vector<std::shared_ptr<Stream>> retire_context(Runtime &r, int32_t dev) {
    std::vector<std::shared_ptr<Stream>> stopping;
    Context *c = r.dev_ctx[dev];
    r.refs[dev] = 0;
    if (!c) return stopping;
    c->active = false;
    r.dev_ctx[dev] = nullptr;
    if (c->def) stopping.push_back(std::move(c->def));
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

// The device block holding p (r.mem held).
const Range *range_at(Runtime &r, uintptr_t p) {
    auto it = r.ranges.upper_bound(p);
    if (it == r.ranges.begin()) return nullptr;
    --it;
    return p - it->first < it->second.map_size ? &it->second : nullptr;
}

// The reservation holding p, as (base, size); base 0 when none.
std::pair<uintptr_t, size_t> reservation_at(Runtime &r, uintptr_t p) {
    auto it = r.reservations.upper_bound(p);
    if (it == r.reservations.begin()) return {0, 0};
    --it;
    if (p - it->first < it->second) return {it->first, it->second};
    return {0, 0};
}

enum class Side { host, device };

// Classifies [p, p + n) for argument `what` of `call`: wholly inside one device block, or
// wholly host memory; anything else is refused naming the address (r.mem held).
aclError classify(Runtime &r, const char *call, const char *what, const void *ptr, size_t n,
                  Side *side, char **view) {
    uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
    if (const Range *rg = range_at(r, p)) {
        size_t left = p - rg->va < rg->size ? rg->va + rg->size - p : 0;
        if (n > left)
            return fail(call, ACL_ERROR_RT_PARAM_INVALID,
                        "%s=%p: [%p, +%zu) runs past the end of the device block [%p, +%zu)", what,
                        ptr, ptr, n, reinterpret_cast<void *>(rg->va), rg->size);
        *side = Side::device;
        *view = rg->view + (p - rg->va);
        return ACL_SUCCESS;
    }
    auto res = reservation_at(r, p);
    if (res.first)
        return fail(call, ACL_ERROR_RT_PARAM_INVALID,
                    "%s=%p is not mapped: it lies in the reserved range [%p, +%zu) but "
                    "nothing is mapped there",
                    what, ptr, reinterpret_cast<void *>(res.first), res.second);
    uintptr_t dev = first_start_in(r.ranges, p, n);
    if (!dev) dev = first_start_in(r.reservations, p, n);
    if (dev)
        return fail(call, ACL_ERROR_RT_PARAM_INVALID,
                    "%s=%p: [%p, +%zu) starts in host memory and runs into device memory at %p",
                    what, ptr, ptr, n, reinterpret_cast<void *>(dev));
    *side = Side::host;
    *view = reinterpret_cast<char *>(p);
    return ACL_SUCCESS;
}

const char *kind_name(int kind) {
    switch (kind) {
    case ACL_MEMCPY_HOST_TO_HOST: return "ACL_MEMCPY_HOST_TO_HOST";
    case ACL_MEMCPY_HOST_TO_DEVICE: return "ACL_MEMCPY_HOST_TO_DEVICE";
    case ACL_MEMCPY_DEVICE_TO_HOST: return "ACL_MEMCPY_DEVICE_TO_HOST";
    case ACL_MEMCPY_DEVICE_TO_DEVICE: return "ACL_MEMCPY_DEVICE_TO_DEVICE";
    default: return "ACL_MEMCPY_DEFAULT";
    }
}

// Checks a copy and resolves where its bytes are (r.mem held).
aclError check_copy(Runtime &r, const char *call, void *dst, size_t dest_max, const void *src,
                    size_t count, aclrtMemcpyKind kind, char **dv, char **sv) {
    if (!dst) return fail(call, ACL_ERROR_INVALID_PARAM, "dst=NULL");
    if (!src) return fail(call, ACL_ERROR_INVALID_PARAM, "src=NULL");
    if (count > dest_max)
        return fail(call, ACL_ERROR_INVALID_PARAM, "count=%zu exceeds destMax=%zu (dst=%p)", count,
                    dest_max, dst);
    if (static_cast<int>(kind) < 0 || static_cast<int>(kind) > ACL_MEMCPY_DEFAULT)
        return fail(call, ACL_ERROR_INVALID_PARAM, "kind=%d is not a copy kind of the stand-in",
                    static_cast<int>(kind));
    *dv = static_cast<char *>(dst);
    *sv = static_cast<char *>(const_cast<void *>(src));
    if (count == 0) return ACL_SUCCESS;
    Side ds, ss;
    if (aclError rc = classify(r, call, "dst", dst, count, &ds, dv)) return rc;
    if (aclError rc = classify(r, call, "src", src, count, &ss, sv)) return rc;
    if (kind == ACL_MEMCPY_DEFAULT) return ACL_SUCCESS;
    bool dst_dev = kind == ACL_MEMCPY_HOST_TO_DEVICE || kind == ACL_MEMCPY_DEVICE_TO_DEVICE;
    bool src_dev = kind == ACL_MEMCPY_DEVICE_TO_HOST || kind == ACL_MEMCPY_DEVICE_TO_DEVICE;
    if ((ds == Side::device) != dst_dev)
        return fail(call, ACL_ERROR_RT_PARAM_INVALID, "kind=%s but dst=%p is %s memory",
                    kind_name(kind), dst, ds == Side::device ? "device" : "host");
    if ((ss == Side::device) != src_dev)
        return fail(call, ACL_ERROR_RT_PARAM_INVALID, "kind=%s but src=%p is %s memory",
                    kind_name(kind), src, ss == Side::device ? "device" : "host");
    return ACL_SUCCESS;
}

aclError check_set(Runtime &r, const char *call, void *dst, size_t max_count, size_t count,
                   char **dv) {
    if (!dst) return fail(call, ACL_ERROR_INVALID_PARAM, "devPtr=NULL");
    if (count > max_count)
        return fail(call, ACL_ERROR_INVALID_PARAM, "count=%zu exceeds maxCount=%zu (devPtr=%p)",
                    count, max_count, dst);
    *dv = static_cast<char *>(dst);
    if (count == 0) return ACL_SUCCESS;
    Side side;
    return classify(r, call, "devPtr", dst, count, &side, dv);
}

aclError charge(Runtime &r, const char *call, int32_t dev, size_t size) {
    if (size > r.cfg.hbm_bytes || r.used[dev] > r.cfg.hbm_bytes - size)
        return fail(call, ACL_ERROR_RT_MEMORY_ALLOCATION,
                    "size=%zu: device %d has %llu of ACL_STANDIN_HBM_BYTES=%llu bytes in use", size,
                    dev, static_cast<unsigned long long>(r.used[dev]),
                    static_cast<unsigned long long>(r.cfg.hbm_bytes));
    r.used[dev] += size;
    return ACL_SUCCESS;
}

// ---- sharing --------------------------------------------------------------------------------

struct Request {
    uint32_t magic;
    uint32_t serial;
};

struct Reply {
    int32_t code;
    uint32_t pad;
    uint64_t size;
};

sockaddr_un service_address(pid_t pid, socklen_t *len) {
    sockaddr_un addr;
    memset(&addr, 0, sizeof addr);
    addr.sun_family = AF_UNIX;
    // Abstract name (leading NUL): nothing in the file system, gone with the socket.
    int n = snprintf(addr.sun_path + 1, sizeof addr.sun_path - 1, "acl-standin.%d",
                     static_cast<int>(pid));
    *len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
    return addr;
}

void set_timeouts(int fd) {
    timeval tv{kSocketTimeoutSec, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

bool read_all(int fd, void *buf, size_t n) {
    char *p = static_cast<char *>(buf);
    while (n) {
        ssize_t got = recv(fd, p, n, 0);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return false;
        p += got;
        n -= static_cast<size_t>(got);
    }
    return true;
}

// Answers one importer: checks its pid (SO_PEERCRED) against the handle's allow list and sends
// the memfd with SCM_RIGHTS.
void serve_one(int conn) {
    Runtime &r = rt();
    set_timeouts(conn);
    ucred cred{};
    socklen_t clen = sizeof cred;
    Request req{};
    if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &clen) != 0 ||
        !read_all(conn, &req, sizeof req) || req.magic != kRequestMagic)
        return;
    Reply rep{ACL_SUCCESS, 0, 0};
    int fd = -1;
    {
        std::shared_lock<std::shared_mutex> lk(r.mem);
        auto it = r.exports.find(req.serial);
        if (it == r.exports.end()) {
            rep.code = ACL_ERROR_RT_INVALID_HANDLE;
        } else if (!it->second.any_pid && !it->second.allowed.count(cred.pid)) {
            rep.code = ACL_ERROR_RT_NO_PERMISSION;
        } else {
            fd = dup(it->second.phys->fd);
            rep.size = it->second.phys->size;
            if (fd < 0) rep.code = ACL_ERROR_RT_MEMORY_ALLOCATION;
        }
    }
    iovec iov{&rep, sizeof rep};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    if (fd >= 0) {
        msg.msg_control = control;
        msg.msg_controllen = sizeof control;
        cmsghdr *cm = CMSG_FIRSTHDR(&msg);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cm), &fd, sizeof fd);
    }
    while (sendmsg(conn, &msg, MSG_NOSIGNAL) < 0 && errno == EINTR) {
    }
    if (fd >= 0) close(fd);
}

void serve(int lfd) {
    for (;;) {
        int conn = accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
        if (conn < 0) {
            if (errno == EBADF || errno == EINVAL || errno == ENOTSOCK) return;
            continue;
        }
        serve_one(conn);
        close(conn);
    }
}

// Starts this process's service at its first export (r.mem held exclusively).
aclError start_service(Runtime &r, const char *call) {
    if (r.server_pid == getpid()) return ACL_SUCCESS;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    socklen_t len = 0;
    sockaddr_un addr = service_address(getpid(), &len);
    if (fd < 0 || bind(fd, reinterpret_cast<sockaddr *>(&addr), len) != 0 || listen(fd, 64) != 0) {
        int err = errno;
        if (fd >= 0) close(fd);
        return fail(call, ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                    "cannot serve shareable handles on @%s: %s", addr.sun_path + 1, strerror(err));
    }
    try {
        std::thread(serve, fd).detach();
    } catch (const std::system_error &e) {
        close(fd);
        return fail(call, ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                    "cannot start the thread serving shareable handles: %s", e.what());
    }
    r.listen_fd = fd;
    r.server_pid = getpid();
    return ACL_SUCCESS;
}

// Asks process `pid` for the memfd of its export `serial`.
aclError fetch_fd(const char *call, uint64_t handle, pid_t pid, uint32_t serial, int *fd_out,
                  size_t *size_out) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return fail(call, ACL_ERROR_RT_INVALID_HANDLE, "shareableHandle=0x%llx: socket: %s",
                    static_cast<unsigned long long>(handle), strerror(errno));
    set_timeouts(fd);
    socklen_t len = 0;
    sockaddr_un addr = service_address(pid, &len);
    int rc;
    while ((rc = connect(fd, reinterpret_cast<sockaddr *>(&addr), len)) != 0 && errno == EINTR) {
    }
    if (rc != 0) {
        int err = errno;
        close(fd);
        if (err == EAGAIN || err == ETIMEDOUT || err == EINPROGRESS)
            return fail(call, ACL_ERROR_RT_WAIT_TIMEOUT,
                        "shareableHandle=0x%llx: process %d did not accept within %d s",
                        static_cast<unsigned long long>(handle), static_cast<int>(pid),
                        kSocketTimeoutSec);
        return fail(call, ACL_ERROR_RT_INVALID_HANDLE,
                    "shareableHandle=0x%llx: process %d serves no shareable handles (%s)",
                    static_cast<unsigned long long>(handle), static_cast<int>(pid), strerror(err));
    }
    Request req{kRequestMagic, serial};
    Reply rep{};
    iovec iov{&rep, sizeof rep};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    ssize_t got = -1;
    if (send(fd, &req, sizeof req, MSG_NOSIGNAL) == static_cast<ssize_t>(sizeof req)) {
        while ((got = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR) {
        }
    }
    int err = errno;
    close(fd);
    int passed = -1;
    for (cmsghdr *cm = CMSG_FIRSTHDR(&msg); got > 0 && cm; cm = CMSG_NXTHDR(&msg, cm)) {
        if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
            memcpy(&passed, CMSG_DATA(cm), sizeof passed);
    }
    if (got != static_cast<ssize_t>(sizeof rep)) {
        if (passed >= 0) close(passed);
        if (got < 0 && (err == EAGAIN || err == EWOULDBLOCK))
            return fail(call, ACL_ERROR_RT_WAIT_TIMEOUT,
                        "shareableHandle=0x%llx: process %d did not answer within %d s",
                        static_cast<unsigned long long>(handle), static_cast<int>(pid),
                        kSocketTimeoutSec);
        return fail(call, ACL_ERROR_RT_INVALID_HANDLE,
                    "shareableHandle=0x%llx: process %d closed the connection",
                    static_cast<unsigned long long>(handle), static_cast<int>(pid));
    }
    if (rep.code == ACL_ERROR_RT_NO_PERMISSION)
        return fail(call, rep.code,
                    "shareableHandle=0x%llx: process %d does not allow pid %d to import it "
                    "(aclrtMemSetPidToShareableHandle, aclrtIpcMemSetImportPid)",
                    static_cast<unsigned long long>(handle), static_cast<int>(pid),
                    static_cast<int>(getpid()));
    if (rep.code != ACL_SUCCESS || passed < 0) {
        if (passed >= 0) close(passed);
        return fail(call, rep.code ? rep.code : ACL_ERROR_RT_INVALID_HANDLE,
                    "shareableHandle=0x%llx: process %d has no such export (never exported, or "
                    "freed)",
                    static_cast<unsigned long long>(handle), static_cast<int>(pid));
    }
    *fd_out = passed;
    *size_out = rep.size;
    return ACL_SUCCESS;
}

// ---- events -------------------------------------------------------------------------------

aclError get_event(const char *call, aclrtEvent event, std::shared_ptr<Event> *out) {
    if (!event) return fail(call, ACL_ERROR_INVALID_PARAM, "event=NULL");
    Runtime &r = rt();
    std::lock_guard<std::mutex> lk(r.mu);
    auto it = r.events.find(event);
    if (it == r.events.end())
        return fail(call, ACL_ERROR_RT_INVALID_HANDLE,
                    "event=%p is not a live event (destroyed, or never created)", event);
    *out = it->second;
    return ACL_SUCCESS;
}

// ---- blocks and IPC keys ----------------------------------------------------------------------

// Maps `map_size` bytes of memfd `fd` as a block (aclrtMalloc, aclrtIpcMemImportByKey): its
// address and view in `rg`; 0, or the errno of the failure (nothing mapped then).
int map_block(Runtime &r, int fd, size_t map_size, Range *rg) {
    void *va = MAP_FAILED;
    void *view = MAP_FAILED;
    if (r.cfg.strict) {
        va = mmap(nullptr, map_size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        view = mmap(nullptr, map_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    } else {
        va = view = mmap(nullptr, map_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    }
    int err = errno;
    if (va == MAP_FAILED || view == MAP_FAILED) {
        if (va != MAP_FAILED) munmap(va, map_size);
        if (view != MAP_FAILED && view != va) munmap(view, map_size);
        return err ? err : ENOMEM;
    }
    rg->va = reinterpret_cast<uintptr_t>(va);
    rg->map_size = map_size;
    rg->view = static_cast<char *>(view);
    return 0;
}

// Unmaps a block of map_block and drops its IPC export (r.mem held exclusively).
void unmap_block(Runtime &r, Range &rg) {
    munmap(reinterpret_cast<void *>(rg.va), rg.map_size);
    if (r.cfg.strict) munmap(rg.view, rg.map_size);
    if (rg.fd >= 0) close(rg.fd);
    if (rg.ipc) {
        r.exports.erase(static_cast<uint32_t>(rg.ipc->shareable));
        close(rg.ipc->fd);
        delete rg.ipc;
        rg.ipc = nullptr;
    }
}

// The memfd and size of export `handle` (the exporting pid in the high half, its serial in the
// low one): this process's own, or asked of the exporting process.
aclError fetch_export(const char *call, uint64_t handle, int *fd, size_t *size) {
    Runtime &r = rt();
    pid_t owner = static_cast<pid_t>(handle >> 32);
    uint32_t serial = static_cast<uint32_t>(handle);
    if (owner == getpid()) {
        std::shared_lock<std::shared_mutex> lk(r.mem);
        auto it = r.exports.find(serial);
        if (it == r.exports.end())
            return fail(call, ACL_ERROR_RT_INVALID_HANDLE,
                        "shareableHandle=0x%llx: this process has no such export (never "
                        "exported, or freed)",
                        static_cast<unsigned long long>(handle));
        *fd = fcntl(it->second.phys->fd, F_DUPFD_CLOEXEC, 0);
        *size = it->second.phys->size;
        if (*fd < 0) return fail(call, ACL_ERROR_RT_MEMORY_ALLOCATION, "dup: %s", strerror(errno));
        return ACL_SUCCESS;
    }
    if (owner <= 0)
        return fail(call, ACL_ERROR_RT_INVALID_HANDLE,
                    "shareableHandle=0x%llx is not a handle the stand-in made",
                    static_cast<unsigned long long>(handle));
    return fetch_fd(call, handle, owner, serial, fd, size);
}

constexpr size_t kIpcKeyLen = 65;  // the key length ACL documents (with its NUL)

// The export a key names, as a shareable handle value; 0 when the key is not one of ours.
uint64_t key_handle(const char *key) {
    int pid = 0;
    unsigned serial = 0;
    int end = 0;
    if (!key || sscanf(key, "acl-standin-ipc.%d.%u%n", &pid, &serial, &end) != 2 ||
        key[end] != '\0' || pid <= 0 || serial == 0)
        return 0;
    return (static_cast<uint64_t>(static_cast<uint32_t>(pid)) << 32) | serial;
}

}  // namespace

// ---- start-up -------------------------------------------------------------------------------

extern "C" {

aclError aclInit(const char *configPath) {
    const char *call = "aclInit";
    Runtime &r = rt();
    std::lock_guard<std::mutex> lk(r.mu);
    if (r.initialized.load())
        return quiet(call, ACL_ERROR_REPEAT_INITIALIZE, "ACL is already initialised");
    if (configPath && *configPath) {
        FILE *f = fopen(configPath, "r");
        if (!f)
            return fail(call, ACL_ERROR_INVALID_PARAM, "configPath=\"%s\": %s", configPath,
                        strerror(errno));
        fclose(f);
    }
    Config cfg;
    if (aclError rc = read_config(&cfg)) return rc;
    {
        std::lock_guard<std::mutex> flk(r.fault_mu);
        // Strict mode is fixed by the first aclInit: mappings made under one mode stay.
        bool strict = r.strict_fixed ? r.cfg.strict : cfg.strict;
        r.cfg = cfg;
        r.cfg.strict = strict;
        r.any_fault = !cfg.faults.empty();
    }
    r.strict_fixed = true;
    r.ever_initialized = true;
    r.initialized = true;
    return ACL_SUCCESS;
}

aclError aclFinalize(void) {
    const char *call = "aclFinalize";
    Runtime &r = rt();
    std::vector<std::shared_ptr<Stream>> stopping;
    {
        std::lock_guard<std::mutex> lk(r.mu);
        if (!r.initialized.load())
            return r.ever_initialized
                       ? fail(call, ACL_ERROR_REPEAT_FINALIZE, "ACL is already finalised")
                       : fail(call, ACL_ERROR_UNINITIALIZE, "called before aclInit");
        if (aclError rc = enter(call)) return rc;
        for (int32_t d = 0; d < kMaxDevices; ++d) {
            if (on_worker_of(r, r.dev_ctx[d]))
                return fail(call, ACL_ERROR_RT_PARAM_INVALID,
                            "called from a host function of a stream, which would wait for "
                            "itself");
        }
        for (int32_t d = 0; d < kMaxDevices; ++d) {
            auto s = retire_context(r, d);
            stopping.insert(stopping.end(), s.begin(), s.end());
        }
        for (auto &s : r.streams) stopping.push_back(s.second);
        r.streams.clear();
        r.initialized = false;
    }
    for (auto &s : stopping) stop_stream(s);
    t_ctx = nullptr;
    return ACL_SUCCESS;
}

const char *aclGetRecentErrMsg(void) {
    if (t_err.empty()) return nullptr;
    t_err_read = t_err;
    t_err.clear();
    return t_err_read.c_str();
}

// ---- devices and contexts -------------------------------------------------------------------

aclError aclrtGetDeviceCount(uint32_t *count) {
    const char *call = "aclrtGetDeviceCount";
    if (aclError rc = enter(call)) return rc;
    if (!count) return fail(call, ACL_ERROR_INVALID_PARAM, "count=NULL");
    if (rt().cfg.devices == 0)
        return fail(call, ACL_ERROR_RT_NO_DEVICE, "there is no device (ACL_STANDIN_DEVICES=0)");
    *count = static_cast<uint32_t>(rt().cfg.devices);
    return ACL_SUCCESS;
}

aclError aclrtGetDevice(int32_t *deviceId) {
    const char *call = "aclrtGetDevice";
    if (aclError rc = enter(call)) return rc;
    if (!deviceId) return fail(call, ACL_ERROR_INVALID_PARAM, "deviceId=NULL");
    Context *c = current();
    if (!c) return quiet(call, ACL_ERROR_RT_CONTEXT_NULL, "this thread has no current device");
    *deviceId = c->device;
    return ACL_SUCCESS;
}

aclError aclrtSetDevice(int32_t deviceId) {
    const char *call = "aclrtSetDevice";
    if (aclError rc = enter(call)) return rc;
    if (aclError rc = check_device(call, "deviceId", deviceId)) return rc;
    Runtime &r = rt();
    std::lock_guard<std::mutex> lk(r.mu);
    Context *c = r.dev_ctx[deviceId];
    if (!c) {
        c = new Context;  // kept for ever (see Context)
        c->device = deviceId;
        r.dev_ctx[deviceId] = c;
        r.contexts.insert(c);
    }
    ++r.refs[deviceId];
    t_ctx = c;
    return ACL_SUCCESS;
}

aclError aclrtResetDevice(int32_t deviceId) {
    const char *call = "aclrtResetDevice";
    if (aclError rc = enter(call)) return rc;
    if (aclError rc = check_device(call, "deviceId", deviceId)) return rc;
    Runtime &r = rt();
    std::vector<std::shared_ptr<Stream>> stopping;
    {
        std::lock_guard<std::mutex> lk(r.mu);
        if (r.refs[deviceId] == 0) return ACL_SUCCESS;
        if (r.refs[deviceId] == 1 && on_worker_of(r, r.dev_ctx[deviceId]))
            return fail(call, ACL_ERROR_RT_PARAM_INVALID,
                        "deviceId=%d: called from a host function of one of its streams, which "
                        "would wait for itself",
                        deviceId);
        if (--r.refs[deviceId] > 0) return ACL_SUCCESS;
        stopping = retire_context(r, deviceId);
    }
    for (auto &s : stopping) stop_stream(s);
    if (t_ctx && !t_ctx->active.load()) t_ctx = nullptr;
    return ACL_SUCCESS;
}

aclError aclrtGetCurrentContext(aclrtContext *context) {
    const char *call = "aclrtGetCurrentContext";
    if (aclError rc = enter(call)) return rc;
    if (!context) return fail(call, ACL_ERROR_INVALID_PARAM, "context=NULL");
    Context *c = current();
    if (!c) return quiet(call, ACL_ERROR_RT_CONTEXT_NULL, "this thread has no current context");
    *context = c;
    return ACL_SUCCESS;
}

aclError aclrtSetCurrentContext(aclrtContext context) {
    const char *call = "aclrtSetCurrentContext";
    if (aclError rc = enter(call)) return rc;
    if (!context) return fail(call, ACL_ERROR_INVALID_PARAM, "context=NULL");
    Runtime &r = rt();
    std::lock_guard<std::mutex> lk(r.mu);
    auto *c = static_cast<Context *>(context);
    if (!r.contexts.count(c))
        return fail(call, ACL_ERROR_INVALID_PARAM, "context=%p is not a context", context);
    if (!c->active.load())
        return fail(call, ACL_ERROR_RT_CONTEXT_NULL,
                    "context=%p (device %d) was destroyed by aclrtResetDevice", context, c->device);
    t_ctx = c;
    return ACL_SUCCESS;
}

aclError aclrtDeviceGetBareTgid(int32_t *pid) {
    const char *call = "aclrtDeviceGetBareTgid";
    if (aclError rc = enter(call)) return rc;
    if (!pid) return fail(call, ACL_ERROR_INVALID_PARAM, "pid=NULL");
    *pid = static_cast<int32_t>(getpid());
    return ACL_SUCCESS;
}

aclError aclrtDeviceCanAccessPeer(int32_t *canAccessPeer, int32_t deviceId, int32_t peerDeviceId) {
    const char *call = "aclrtDeviceCanAccessPeer";
    if (aclError rc = enter(call)) return rc;
    if (!canAccessPeer) return fail(call, ACL_ERROR_INVALID_PARAM, "canAccessPeer=NULL");
    if (aclError rc = check_device(call, "deviceId", deviceId)) return rc;
    if (aclError rc = check_device(call, "peerDeviceId", peerDeviceId)) return rc;
    *canAccessPeer = deviceId != peerDeviceId ? 1 : 0;
    return ACL_SUCCESS;
}

aclError aclrtDeviceEnablePeerAccess(int32_t peerDeviceId, uint32_t flags) {
    const char *call = "aclrtDeviceEnablePeerAccess";
    Context *c = nullptr;
    if (aclError rc = enter_ctx(call, &c)) return rc;
    if (flags != 0) return fail(call, ACL_ERROR_INVALID_PARAM, "flags=%u: must be 0", flags);
    if (aclError rc = check_device(call, "peerDeviceId", peerDeviceId)) return rc;
    if (peerDeviceId == c->device)
        return fail(call, ACL_ERROR_RT_INVALID_DEVICEID,
                    "peerDeviceId=%d is the current device itself", peerDeviceId);
    std::lock_guard<std::mutex> lk(rt().mu);
    // The header has no "already enabled" code: a second enable succeeds.
    c->peers.insert(peerDeviceId);
    return ACL_SUCCESS;
}

// ---- virtual memory -------------------------------------------------------------------------

aclError aclrtMemGetAllocationGranularity(aclrtPhysicalMemProp *prop,
                                          aclrtMemGranularityOptions option, size_t *granularity) {
    const char *call = "aclrtMemGetAllocationGranularity";
    if (aclError rc = enter(call)) return rc;
    if (!prop) return fail(call, ACL_ERROR_INVALID_PARAM, "prop=NULL");
    if (!granularity) return fail(call, ACL_ERROR_INVALID_PARAM, "granularity=NULL");
    if (option != ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM &&
        option != ACL_RT_MEM_ALLOC_GRANULARITY_RECOMMENDED)
        return fail(call, ACL_ERROR_INVALID_PARAM, "option=%d is not a granularity option",
                    static_cast<int>(option));
    *granularity = kGranularity;
    return ACL_SUCCESS;
}

aclError aclrtReserveMemAddress(void **virPtr, size_t size, size_t alignment, void *expectPtr,
                                uint64_t flags) {
    const char *call = "aclrtReserveMemAddress";
    Context *c = nullptr;
    if (aclError rc = enter_ctx(call, &c)) return rc;
    if (!virPtr) return fail(call, ACL_ERROR_INVALID_PARAM, "virPtr=NULL");
    if (size == 0 || size % kGranularity)
        return fail(call, ACL_ERROR_INVALID_PARAM,
                    "size=%zu is not a positive multiple of the granularity %zu", size,
                    kGranularity);
    if (expectPtr)
        return fail(call, ACL_ERROR_INVALID_PARAM, "expectPtr=%p: must be NULL", expectPtr);
    if (flags)
        return fail(call, ACL_ERROR_INVALID_PARAM, "flags=0x%llx: must be 0",
                    static_cast<unsigned long long>(flags));
    if (alignment & (alignment - 1))
        return fail(call, ACL_ERROR_INVALID_PARAM, "alignment=%zu is not a power of two",
                    alignment);
    size_t align = alignment > kGranularity ? alignment : kGranularity;
    if (size > SIZE_MAX - align)
        return fail(call, ACL_ERROR_RT_MEMORY_ALLOCATION, "size=%zu: too large", size);
    Runtime &r = rt();
    std::unique_lock<std::shared_mutex> lk(r.mem);
    void *base = reserve_range(size, align);
    if (!base)
        return fail(call, ACL_ERROR_RT_MEMORY_ALLOCATION, "size=%zu: cannot reserve: %s", size,
                    strerror(errno));
    r.reservations[reinterpret_cast<uintptr_t>(base)] = size;
    *virPtr = base;
    return ACL_SUCCESS;
}

aclError aclrtReleaseMemAddress(void *virPtr) {
    const char *call = "aclrtReleaseMemAddress";
    Context *c = nullptr;
    if (aclError rc = enter_ctx(call, &c)) return rc;
    Runtime &r = rt();
    std::unique_lock<std::shared_mutex> lk(r.mem);
    uintptr_t va = reinterpret_cast<uintptr_t>(virPtr);
    auto it = r.reservations.find(va);
    if (it == r.reservations.end())
        return fail(call, ACL_ERROR_INVALID_PARAM,
                    "virPtr=%p is not an address aclrtReserveMemAddress returned", virPtr);
    if (uintptr_t m = first_start_in(r.ranges, va, it->second))
        return fail(call, ACL_ERROR_RT_PARAM_INVALID,
                    "virPtr=%p: memory is still mapped at %p (aclrtUnmapMem first)", virPtr,
                    reinterpret_cast<void *>(m));
    munmap(virPtr, it->second);
    r.reservations.erase(it);
    return ACL_SUCCESS;
}

aclError aclrtMallocPhysical(aclrtDrvMemHandle *handle, size_t size,
                             const aclrtPhysicalMemProp *prop, uint64_t flags) {
    const char *call = "aclrtMallocPhysical";
    Context *c = nullptr;
    if (aclError rc = enter_ctx(call, &c)) return rc;
    if (!handle) return fail(call, ACL_ERROR_INVALID_PARAM, "handle=NULL");
    if (!prop) return fail(call, ACL_ERROR_INVALID_PARAM, "prop=NULL");
    if (flags)
        return fail(call, ACL_ERROR_INVALID_PARAM, "flags=0x%llx: must be 0",
                    static_cast<unsigned long long>(flags));
    if (size == 0 || size % kGranularity)
        return fail(call, ACL_ERROR_INVALID_PARAM,
                    "size=%zu is not a positive multiple of the granularity %zu", size,
                    kGranularity);
    if (prop->location.type != ACL_MEM_LOCATION_TYPE_DEVICE)
        return fail(call, ACL_ERROR_INVALID_PARAM,
                    "prop->location.type=%d: only ACL_MEM_LOCATION_TYPE_DEVICE (1) is modelled",
                    static_cast<int>(prop->location.type));
    if (static_cast<int64_t>(prop->location.id) != c->device)
        return fail(call, ACL_ERROR_INVALID_DEVICE,
                    "prop->location.id=%u is not the current device %d", prop->location.id,
                    c->device);
    if (prop->handleType != ACL_MEM_HANDLE_TYPE_NONE)
        return fail(call, ACL_ERROR_INVALID_PARAM,
                    "prop->handleType=%d: must be ACL_MEM_HANDLE_TYPE_NONE",
                    static_cast<int>(prop->handleType));
    if (prop->allocationType != ACL_MEM_ALLOCATION_TYPE_PINNED)
        return fail(call, ACL_ERROR_INVALID_PARAM,
                    "prop->allocationType=%d: must be ACL_MEM_ALLOCATION_TYPE_PINNED",
                    static_cast<int>(prop->allocationType));
    Runtime &r = rt();
    std::unique_lock<std::shared_mutex> lk(r.mem);
    if (aclError rc = charge(r, call, c->device, size)) return rc;
    int fd = make_memfd("acl-standin-hbm", size);
    if (fd < 0) {
        r.used[c->device] -= size;
        return fail(call, ACL_ERROR_RT_MEMORY_ALLOCATION, "size=%zu: memfd: %s", size,
                    strerror(errno));
    }
    auto *p = new Phys;
    p->fd = fd;
    p->size = size;
    p->device = c->device;
    r.phys.insert(p);
    *handle = p;
    return ACL_SUCCESS;
}

aclError aclrtFreePhysical(aclrtDrvMemHandle handle) {
    const char *call = "aclrtFreePhysical";
    Context *c = nullptr;
    if (aclError rc = enter_ctx(call, &c)) return rc;
    Runtime &r = rt();
    std::unique_lock<std::shared_mutex> lk(r.mem);
    auto *p = static_cast<Phys *>(handle);
    if (!r.phys.count(p))
        return fail(call, ACL_ERROR_RT_INVALID_HANDLE,
                    "handle=%p is not a live physical allocation", handle);
    if (p->refs > 1) {  // a retained reference: the memory stays until the last goes
        --p->refs;
        return ACL_SUCCESS;
    }
    if (p->maps)
        return fail(call, ACL_ERROR_RT_PARAM_INVALID,
                    "handle=%p is still mapped %d time(s) (aclrtUnmapMem first)", handle, p->maps);
    if (p->shareable) r.exports.erase(static_cast<uint32_t>(p->shareable));
    if (!p->imported) r.used[p->device] -= p->size;
    close(p->fd);
    r.phys.erase(p);
    delete p;
    return ACL_SUCCESS;
}

aclError aclrtMemRetainAllocationHandle(void *virPtr, aclrtDrvMemHandle *handle) {
    const char *call = "aclrtMemRetainAllocationHandle";
    Context *c = nullptr;
    if (aclError rc = enter_ctx(call, &c)) return rc;
    if (!handle) return fail(call, ACL_ERROR_INVALID_PARAM, "handle=NULL");
    Runtime &r = rt();
    std::unique_lock<std::shared_mutex> lk(r.mem);
    uintptr_t va = reinterpret_cast<uintptr_t>(virPtr);
    auto it = r.ranges.find(va);
    if (it != r.ranges.end() && it->second.phys) {
        ++it->second.phys->refs;
        *handle = it->second.phys;
        return ACL_SUCCESS;
    }
    if (const Range *rg = range_at(r, va))
        return fail(call, ACL_ERROR_RT_PARAM_INVALID,
                    "virPtr=%p lies in the device block [%p, +%zu), which %s", virPtr,
                    reinterpret_cast<void *>(rg->va), rg->size,
                    rg->phys ? "aclrtMapMem mapped at its start, not here"
                             : "aclrtMalloc allocated (no physical handle to retain)");
    // Host memory: a query's answer, not misuse.
    return quiet(call, ACL_ERROR_RT_PARAM_INVALID, "virPtr=%p is not device memory", virPtr);
}

aclError aclrtMapMem(void *virPtr, size_t size, size_t offset, aclrtDrvMemHandle handle,
                     uint64_t flags) {
    const char *call = "aclrtMapMem";
    Context *c = nullptr;
    if (aclError rc = enter_ctx(call, &c)) return rc;
    Runtime &r = rt();
    std::unique_lock<std::shared_mutex> lk(r.mem);
    auto *p = static_cast<Phys *>(handle);
    uintptr_t va = reinterpret_cast<uintptr_t>(virPtr);
    if (!r.phys.count(p))
        return fail(call, ACL_ERROR_RT_INVALID_HANDLE,
                    "handle=%p is not a live physical allocation", handle);
    if (flags)
        return fail(call, ACL_ERROR_INVALID_PARAM, "flags=0x%llx: must be 0",
                    static_cast<unsigned long long>(flags));
    if (size == 0 || size % kGranularity || offset % kGranularity || va % kGranularity)
        return fail(call, ACL_ERROR_INVALID_PARAM,
                    "virPtr=%p size=%zu offset=%zu: each must be a multiple of the granularity "
                    "%zu (size > 0)",
                    virPtr, size, offset, kGranularity);
    if (offset > p->size || size > p->size - offset)
        return fail(call, ACL_ERROR_INVALID_PARAM,
                    "offset=%zu size=%zu: past the end of handle=%p (%zu bytes)", offset, size,
                    handle, p->size);
    auto res = reservation_at(r, va);
    if (!res.first || size > res.first + res.second - va)
        return fail(call, ACL_ERROR_RT_PARAM_INVALID,
                    "virPtr=%p size=%zu is not inside one range aclrtReserveMemAddress returned",
                    virPtr, size);
    const Range *at = range_at(r, va);
    uintptr_t next = at ? at->va : first_start_in(r.ranges, va, size);
    if (next)
        return fail(call, ACL_ERROR_RT_PARAM_INVALID,
                    "virPtr=%p size=%zu overlaps the mapping at %p (aclrtUnmapMem first)", virPtr,
                    size, reinterpret_cast<void *>(next));
    char *view;
    if (r.cfg.strict) {
        // The program's view stays PROT_NONE; the stand-in copies through its own alias.
        void *alias = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, p->fd,
                           static_cast<off_t>(offset));
        if (alias == MAP_FAILED)
            return fail(call, ACL_ERROR_RT_MEMORY_ALLOCATION, "virPtr=%p: mmap: %s", virPtr,
                        strerror(errno));
        view = static_cast<char *>(alias);
    } else {
        if (mmap(virPtr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, p->fd,
                 static_cast<off_t>(offset)) == MAP_FAILED)
            return fail(call, ACL_ERROR_RT_MEMORY_ALLOCATION, "virPtr=%p: mmap: %s", virPtr,
                        strerror(errno));
        view = static_cast<char *>(virPtr);
    }
    Range rg;
    rg.va = va;
    rg.size = size;
    rg.map_size = size;
    rg.view = view;
    rg.phys = p;
    rg.device = p->device;
    r.ranges[va] = rg;
    ++p->maps;
    return ACL_SUCCESS;
}

aclError aclrtUnmapMem(void *virPtr) {
    const char *call = "aclrtUnmapMem";
    Context *c = nullptr;
    if (aclError rc = enter_ctx(call, &c)) return rc;
    Runtime &r = rt();
    std::unique_lock<std::shared_mutex> lk(r.mem);
    auto it = r.ranges.find(reinterpret_cast<uintptr_t>(virPtr));
    if (it == r.ranges.end() || !it->second.phys)
        return fail(call, ACL_ERROR_RT_PARAM_INVALID,
                    "virPtr=%p is not the start of a mapping aclrtMapMem made", virPtr);
    Range &rg = it->second;
    if (r.cfg.strict)
        munmap(rg.view, rg.map_size);
    else
        unmap_to_reserved(rg.va, rg.map_size);
    --rg.phys->maps;
    r.ranges.erase(it);
    return ACL_SUCCESS;
}

// ---- sharing --------------------------------------------------------------------------------

aclError aclrtMemExportToShareableHandle(aclrtDrvMemHandle handle, aclrtMemHandleType handleType,
                                         uint64_t flags, uint64_t *shareableHandle) {
    const char *call = "aclrtMemExportToShareableHandle";
    Context *c = nullptr;
    if (aclError rc = enter_ctx(call, &c)) return rc;
    if (!shareableHandle) return fail(call, ACL_ERROR_INVALID_PARAM, "shareableHandle=NULL");
    if (handleType != ACL_MEM_HANDLE_TYPE_NONE)
        return fail(call, ACL_ERROR_INVALID_PARAM,
                    "handleType=%d: must be ACL_MEM_HANDLE_TYPE_NONE",
                    static_cast<int>(handleType));
    if (flags & ~ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION)
        return fail(call, ACL_ERROR_INVALID_PARAM, "flags=0x%llx: unknown flag",
                    static_cast<unsigned long long>(flags));
    Runtime &r = rt();
    std::unique_lock<std::shared_mutex> lk(r.mem);
    auto *p = static_cast<Phys *>(handle);
    if (!r.phys.count(p))
        return fail(call, ACL_ERROR_RT_INVALID_HANDLE,
                    "handle=%p is not a live physical allocation", handle);
    if (p->imported)
        return fail(call, ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                    "handle=%p was imported: only the allocating process exports", handle);
    if (aclError rc = start_service(r, call)) return rc;
    bool any = flags & ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION;
    if (!p->shareable) {
        uint32_t serial = r.next_serial++;
        p->shareable = (static_cast<uint64_t>(static_cast<uint32_t>(getpid())) << 32) | serial;
        r.exports[serial].phys = p;
    }
    Export &e = r.exports[static_cast<uint32_t>(p->shareable)];
    e.any_pid = e.any_pid || any;
    *shareableHandle = p->shareable;
    return ACL_SUCCESS;
}

aclError aclrtMemSetPidToShareableHandle(uint64_t shareableHandle, int32_t *pid, size_t pidNum) {
    const char *call = "aclrtMemSetPidToShareableHandle";
    Context *c = nullptr;
    if (aclError rc = enter_ctx(call, &c)) return rc;
    if (!pid || pidNum == 0)
        return fail(call, ACL_ERROR_INVALID_PARAM, "pid=%p pidNum=%zu: no pids given",
                    static_cast<void *>(pid), pidNum);
    Runtime &r = rt();
    std::unique_lock<std::shared_mutex> lk(r.mem);
    auto it = r.exports.find(static_cast<uint32_t>(shareableHandle));
    if ((shareableHandle >> 32) != static_cast<uint32_t>(getpid()) || it == r.exports.end())
        return fail(call, ACL_ERROR_RT_INVALID_HANDLE,
                    "shareableHandle=0x%llx was not exported by this process (pid %d)",
                    static_cast<unsigned long long>(shareableHandle), static_cast<int>(getpid()));
    for (size_t i = 0; i < pidNum; ++i) {
        if (pid[i] <= 0)
            return fail(call, ACL_ERROR_INVALID_PARAM, "pid[%zu]=%d is not a process id", i,
                        pid[i]);
    }
    for (size_t i = 0; i < pidNum; ++i) it->second.allowed.insert(pid[i]);
    return ACL_SUCCESS;
}

aclError aclrtMemImportFromShareableHandle(uint64_t shareableHandle, int32_t deviceId,
                                           aclrtDrvMemHandle *handle) {
    const char *call = "aclrtMemImportFromShareableHandle";
    Context *c = nullptr;
    if (aclError rc = enter_ctx(call, &c)) return rc;
    if (!handle) return fail(call, ACL_ERROR_INVALID_PARAM, "handle=NULL");
    if (aclError rc = check_device(call, "deviceId", deviceId)) return rc;
    Runtime &r = rt();
    int fd = -1;
    size_t size = 0;
    if (aclError rc = fetch_export(call, shareableHandle, &fd, &size)) return rc;
    auto *p = new Phys;
    p->fd = fd;
    p->size = size;
    p->device = deviceId;
    p->imported = true;
    std::unique_lock<std::shared_mutex> lk(r.mem);
    r.phys.insert(p);
    *handle = p;
    return ACL_SUCCESS;
}

// ---- IPC keys -------------------------------------------------------------------------------
// An aclrtMalloc block is exported whole under a key "acl-standin-ipc.<pid>.<serial>" (key_handle):
// the export of a shareable handle under another name, served by the same socket and pid list.

aclError aclrtIpcMemGetExportKey(void *devPtr, size_t size, char *key, size_t len, uint64_t flags) {
    const char *call = "aclrtIpcMemGetExportKey";
    Context *c = nullptr;
    if (aclError rc = enter_ctx(call, &c)) return rc;
    if (!key || len < kIpcKeyLen)
        return fail(call, ACL_ERROR_INVALID_PARAM, "key=%p len=%zu: needs room for %zu bytes",
                    static_cast<void *>(key), len, kIpcKeyLen);
    if (flags & ~ACL_RT_IPC_MEM_EXPORT_FLAG_DISABLE_PID_VALIDATION)
        return fail(call, ACL_ERROR_INVALID_PARAM, "flags=0x%llx: unknown flag",
                    static_cast<unsigned long long>(flags));
    Runtime &r = rt();
    std::unique_lock<std::shared_mutex> lk(r.mem);
    auto it = r.ranges.find(reinterpret_cast<uintptr_t>(devPtr));
    if (it == r.ranges.end() || it->second.fd < 0) {
        const Range *rg = range_at(r, reinterpret_cast<uintptr_t>(devPtr));
        return fail(call, ACL_ERROR_RT_PARAM_INVALID,
                    "devPtr=%p is not an address aclrtMalloc returned%s", devPtr,
                    !rg           ? ""
                    : rg->phys    ? " (aclrtMapMem memory: aclrtMemExportToShareableHandle)"
                    : rg->fd >= 0 ? " (it lies inside such a block)"
                                  : " (it was imported)");
    }
    Range &rg = it->second;
    if (size == 0 || size > rg.size)
        return fail(call, ACL_ERROR_INVALID_PARAM,
                    "size=%zu: the block at devPtr=%p holds %zu bytes (size > 0)", size, devPtr,
                    rg.size);
    if (aclError rc = start_service(r, call)) return rc;
    if (!rg.ipc) {
        int fd = fcntl(rg.fd, F_DUPFD_CLOEXEC, 0);
        if (fd < 0) return fail(call, ACL_ERROR_RT_MEMORY_ALLOCATION, "dup: %s", strerror(errno));
        uint32_t serial = r.next_serial++;
        rg.ipc = new Phys;
        rg.ipc->fd = fd;
        rg.ipc->size = rg.map_size;
        rg.ipc->device = rg.device;
        rg.ipc->shareable = (static_cast<uint64_t>(static_cast<uint32_t>(getpid())) << 32) | serial;
        r.exports[serial].phys = rg.ipc;
    }
    Export &e = r.exports[static_cast<uint32_t>(rg.ipc->shareable)];
    e.any_pid = e.any_pid || (flags & ACL_RT_IPC_MEM_EXPORT_FLAG_DISABLE_PID_VALIDATION);
    snprintf(key, len, "acl-standin-ipc.%d.%u", static_cast<int>(getpid()),
             static_cast<uint32_t>(rg.ipc->shareable));
    return ACL_SUCCESS;
}

aclError aclrtIpcMemSetImportPid(const char *key, int32_t *pid, size_t num) {
    const char *call = "aclrtIpcMemSetImportPid";
    Context *c = nullptr;
    if (aclError rc = enter_ctx(call, &c)) return rc;
    if (!pid || num == 0)
        return fail(call, ACL_ERROR_INVALID_PARAM, "pid=%p num=%zu: no pids given",
                    static_cast<void *>(pid), num);
    for (size_t i = 0; i < num; ++i) {
        if (pid[i] <= 0)
            return fail(call, ACL_ERROR_INVALID_PARAM, "pid[%zu]=%d is not a process id", i,
                        pid[i]);
    }
    uint64_t h = key_handle(key);
    Runtime &r = rt();
    std::unique_lock<std::shared_mutex> lk(r.mem);
    auto it = r.exports.find(static_cast<uint32_t>(h));
    if (!h || (h >> 32) != static_cast<uint32_t>(getpid()) || it == r.exports.end())
        return fail(call, ACL_ERROR_RT_INVALID_HANDLE,
                    "key=\"%s\" was not exported by this process (pid %d), or was closed",
                    key ? key : "(null)", static_cast<int>(getpid()));
    for (size_t i = 0; i < num; ++i) it->second.allowed.insert(pid[i]);
    return ACL_SUCCESS;
}

aclError aclrtIpcMemImportByKey(void **devPtr, const char *key, uint64_t flags) {
    const char *call = "aclrtIpcMemImportByKey";
    Context *c = nullptr;
    if (aclError rc = enter_ctx(call, &c)) return rc;
    if (!devPtr) return fail(call, ACL_ERROR_INVALID_PARAM, "devPtr=NULL");
    if (flags & ~ACL_RT_IPC_MEM_IMPORT_FLAG_ENABLE_PEER_ACCESS)
        return fail(call, ACL_ERROR_INVALID_PARAM, "flags=0x%llx: unknown flag",
                    static_cast<unsigned long long>(flags));
    uint64_t h = key_handle(key);
    if (!h)
        return fail(call, ACL_ERROR_RT_INVALID_HANDLE, "key=\"%s\" is not a key the stand-in made",
                    key ? key : "(null)");
    Runtime &r = rt();
    {
        std::shared_lock<std::shared_mutex> lk(r.mem);
        if (r.ipc_imports.count(key))
            return fail(call, ACL_ERROR_RT_PARAM_INVALID,
                        "key=\"%s\" is imported already (aclrtIpcMemClose first)", key);
    }
    int fd = -1;
    size_t size = 0;
    if (aclError rc = fetch_export(call, h, &fd, &size)) return rc;
    std::unique_lock<std::shared_mutex> lk(r.mem);
    Range rg;
    int err = map_block(r, fd, size, &rg);
    close(fd);
    if (err)
        return fail(call, ACL_ERROR_RT_MEMORY_ALLOCATION, "key=\"%s\": %s", key, strerror(err));
    rg.size = size;
    rg.device = c->device;
    rg.ipc_key = key;
    r.ranges[rg.va] = rg;
    r.ipc_imports[key] = rg.va;
    *devPtr = reinterpret_cast<void *>(rg.va);
    return ACL_SUCCESS;
}

aclError aclrtIpcMemClose(const char *key) {
    const char *call = "aclrtIpcMemClose";
    Context *c = nullptr;
    if (aclError rc = enter_ctx(call, &c)) return rc;
    Runtime &r = rt();
    std::unique_lock<std::shared_mutex> lk(r.mem);
    if (key) {
        auto imp = r.ipc_imports.find(key);
        if (imp != r.ipc_imports.end()) {  // an importer: unmaps the block
            auto it = r.ranges.find(imp->second);
            unmap_block(r, it->second);
            r.ranges.erase(it);
            r.ipc_imports.erase(imp);
            return ACL_SUCCESS;
        }
    }
    uint64_t h = key_handle(key);
    if (h && (h >> 32) == static_cast<uint32_t>(getpid())) {  // the exporter: ends the export
        for (auto &kv : r.ranges) {
            Range &rg = kv.second;
            if (rg.ipc && rg.ipc->shareable == h) {
                r.exports.erase(static_cast<uint32_t>(h));
                close(rg.ipc->fd);
                delete rg.ipc;
                rg.ipc = nullptr;
                return ACL_SUCCESS;
            }
        }
    }
    return fail(call, ACL_ERROR_RT_PARAM_INVALID,
                "key=\"%s\" is neither imported nor exported by this process (pid %d)",
                key ? key : "(null)", static_cast<int>(getpid()));
}

aclError aclrtMemGetAddressRange(void *ptr, void **pbase, size_t *psize) {
    const char *call = "aclrtMemGetAddressRange";
    Context *c = nullptr;
    if (aclError rc = enter_ctx(call, &c)) return rc;
    if (!pbase || !psize)
        return fail(call, ACL_ERROR_INVALID_PARAM, "pbase=%p psize=%p: both are needed",
                    static_cast<void *>(pbase), static_cast<void *>(psize));
    Runtime &r = rt();
    std::shared_lock<std::shared_mutex> lk(r.mem);
    uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
    if (const Range *rg = range_at(r, p)) {
        if (p - rg->va < rg->size) {
            *pbase = reinterpret_cast<void *>(rg->va);
            *psize = rg->size;
            return ACL_SUCCESS;
        }
    }
    auto hb = r.host_blocks.upper_bound(ptr);
    if (hb != r.host_blocks.begin()) {
        --hb;
        uintptr_t b = reinterpret_cast<uintptr_t>(hb->first);
        if (p - b < hb->second) {
            *pbase = hb->first;
            *psize = hb->second;
            return ACL_SUCCESS;
        }
    }
    // Memory ACL did not allocate: a query's answer, not misuse.
    return quiet(call, ACL_ERROR_RT_PARAM_INVALID, "ptr=%p is in no block ACL allocated or mapped",
                 ptr);
}

// ---- plain allocations ----------------------------------------------------------------------

aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy) {
    const char *call = "aclrtMalloc";
    Context *c = nullptr;
    if (aclError rc = enter_ctx(call, &c)) return rc;
    (void)policy;  // every policy gets the same host memory
    if (!devPtr) return fail(call, ACL_ERROR_INVALID_PARAM, "devPtr=NULL");
    if (size == 0) return fail(call, ACL_ERROR_INVALID_PARAM, "size=0");
    if (size > SIZE_MAX - kGranularity)
        return fail(call, ACL_ERROR_RT_MEMORY_ALLOCATION, "size=%zu: too large", size);
    size_t map_size = round_up(size, kPage);
    Runtime &r = rt();
    std::unique_lock<std::shared_mutex> lk(r.mem);
    if (aclError rc = charge(r, call, c->device, map_size)) return rc;
    int fd = make_memfd("acl-standin-malloc", map_size);
    Range rg;
    int err = fd >= 0 ? map_block(r, fd, map_size, &rg) : errno;
    if (err) {
        if (fd >= 0) close(fd);
        r.used[c->device] -= map_size;
        return fail(call, ACL_ERROR_RT_MEMORY_ALLOCATION, "size=%zu: %s", size, strerror(err));
    }
    rg.size = size;
    rg.device = c->device;
    rg.fd = fd;
    r.ranges[rg.va] = rg;
    *devPtr = reinterpret_cast<void *>(rg.va);
    return ACL_SUCCESS;
}

aclError aclrtFree(void *devPtr) {
    const char *call = "aclrtFree";
    Context *c = nullptr;
    if (aclError rc = enter_ctx(call, &c)) return rc;
    Runtime &r = rt();
    std::unique_lock<std::shared_mutex> lk(r.mem);
    auto it = r.ranges.find(reinterpret_cast<uintptr_t>(devPtr));
    if (!devPtr || it == r.ranges.end() || it->second.phys || !it->second.ipc_key.empty())
        return fail(call, ACL_ERROR_INVALID_PARAM,
                    "devPtr=%p is not an address aclrtMalloc returned", devPtr);
    Range &rg = it->second;
    unmap_block(r, rg);
    r.used[rg.device] -= rg.map_size;
    r.ranges.erase(it);
    return ACL_SUCCESS;
}

aclError aclrtMallocHost(void **hostPtr, size_t size) {
    const char *call = "aclrtMallocHost";
    Context *c = nullptr;
    if (aclError rc = enter_ctx(call, &c)) return rc;
    if (!hostPtr) return fail(call, ACL_ERROR_INVALID_PARAM, "hostPtr=NULL");
    if (size == 0) return fail(call, ACL_ERROR_INVALID_PARAM, "size=0");
    void *p = nullptr;
    if (posix_memalign(&p, kPage, size) != 0)
        return fail(call, ACL_ERROR_RT_MEMORY_ALLOCATION, "size=%zu: out of host memory", size);
    Runtime &r = rt();
    std::unique_lock<std::shared_mutex> lk(r.mem);
    r.host_blocks[p] = size;
    *hostPtr = p;
    return ACL_SUCCESS;
}

aclError aclrtFreeHost(void *hostPtr) {
    const char *call = "aclrtFreeHost";
    Context *c = nullptr;
    if (aclError rc = enter_ctx(call, &c)) return rc;
    Runtime &r = rt();
    std::unique_lock<std::shared_mutex> lk(r.mem);
    auto it = r.host_blocks.find(hostPtr);
    if (it == r.host_blocks.end())
        return fail(call, ACL_ERROR_INVALID_PARAM,
                    "hostPtr=%p is not an address aclrtMallocHost returned", hostPtr);
    r.host_blocks.erase(it);
    free(hostPtr);
    return ACL_SUCCESS;
}

// ---- copies ---------------------------------------------------------------------------------

aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count,
                     aclrtMemcpyKind kind) {
    const char *call = "aclrtMemcpy";
    Context *c = nullptr;
    if (aclError rc = enter_ctx(call, &c)) return rc;
    Runtime &r = rt();
    std::shared_lock<std::shared_mutex> lk(r.mem);
    char *d = nullptr, *s = nullptr;
    if (aclError rc = check_copy(r, call, dst, destMax, src, count, kind, &d, &s)) return rc;
    if (count) memmove(d, s, count);
    return ACL_SUCCESS;
}

aclError aclrtMemcpyAsync(void *dst, size_t destMax, const void *src, size_t count,
                          aclrtMemcpyKind kind, aclrtStream stream) {
    const char *call = "aclrtMemcpyAsync";
    Context *c = nullptr;
    if (aclError rc = enter_ctx(call, &c)) return rc;
    Runtime &r = rt();
    {
        std::shared_lock<std::shared_mutex> lk(r.mem);
        char *d = nullptr, *s = nullptr;
        if (aclError rc = check_copy(r, call, dst, destMax, src, count, kind, &d, &s)) return rc;
    }
    std::shared_ptr<Stream> st;
    if (aclError rc = get_stream(call, stream, c, &st, true)) return rc;
    // Checked again when the stream reaches it: the memory may be unmapped by then.
    enqueue(st.get(), [dst, destMax, src, count, kind](std::string *msg) {
        Runtime &rr = rt();
        std::shared_lock<std::shared_mutex> lk(rr.mem);
        char *d = nullptr, *s = nullptr;
        aclError rc = check_copy(rr, "aclrtMemcpyAsync", dst, destMax, src, count, kind, &d, &s);
        if (rc) {
            *msg = t_err;
            return rc;
        }
        if (count) memmove(d, s, count);
        return ACL_SUCCESS;
    });
    return ACL_SUCCESS;
}

aclError aclrtMemset(void *devPtr, size_t maxCount, int32_t value, size_t count) {
    const char *call = "aclrtMemset";
    Context *c = nullptr;
    if (aclError rc = enter_ctx(call, &c)) return rc;
    Runtime &r = rt();
    std::shared_lock<std::shared_mutex> lk(r.mem);
    char *d = nullptr;
    if (aclError rc = check_set(r, call, devPtr, maxCount, count, &d)) return rc;
    if (count) memset(d, value, count);
    return ACL_SUCCESS;
}

aclError aclrtMemsetAsync(void *devPtr, size_t maxCount, int32_t value, size_t count,
                          aclrtStream stream) {
    const char *call = "aclrtMemsetAsync";
    Context *c = nullptr;
    if (aclError rc = enter_ctx(call, &c)) return rc;
    Runtime &r = rt();
    {
        std::shared_lock<std::shared_mutex> lk(r.mem);
        char *d = nullptr;
        if (aclError rc = check_set(r, call, devPtr, maxCount, count, &d)) return rc;
    }
    std::shared_ptr<Stream> st;
    if (aclError rc = get_stream(call, stream, c, &st, true)) return rc;
    enqueue(st.get(), [devPtr, maxCount, value, count](std::string *msg) {
        Runtime &rr = rt();
        std::shared_lock<std::shared_mutex> lk(rr.mem);
        char *d = nullptr;
        aclError rc = check_set(rr, "aclrtMemsetAsync", devPtr, maxCount, count, &d);
        if (rc) {
            *msg = t_err;
            return rc;
        }
        if (count) memset(d, value, count);
        return ACL_SUCCESS;
    });
    return ACL_SUCCESS;
}

// ---- streams and events ---------------------------------------------------------------------

aclError aclrtCreateStream(aclrtStream *stream) {
    const char *call = "aclrtCreateStream";
    Context *c = nullptr;
    if (aclError rc = enter_ctx(call, &c)) return rc;
    if (!stream) return fail(call, ACL_ERROR_INVALID_PARAM, "stream=NULL");
    auto s = start_stream(c);
    if (!s) return fail(call, ACL_ERROR_RT_MEMORY_ALLOCATION, "cannot start the stream's thread");
    Runtime &r = rt();
    std::lock_guard<std::mutex> lk(r.mu);
    r.streams[s.get()] = s;
    *stream = s.get();
    return ACL_SUCCESS;
}

aclError aclrtDestroyStream(aclrtStream stream) {
    const char *call = "aclrtDestroyStream";
    Context *c = nullptr;
    if (aclError rc = enter_ctx(call, &c)) return rc;
    if (!stream) return fail(call, ACL_ERROR_INVALID_PARAM, "stream=NULL (the default stream)");
    Runtime &r = rt();
    std::shared_ptr<Stream> s;
    {
        std::lock_guard<std::mutex> lk(r.mu);
        auto it = r.streams.find(stream);
        if (it == r.streams.end())
            return fail(call, ACL_ERROR_RT_STREAM_CONTEXT,
                        "stream=%p is not a live stream (destroyed, or never created)", stream);
        if (it->second->worker_id == std::this_thread::get_id())
            return fail(call, ACL_ERROR_RT_PARAM_INVALID,
                        "stream=%p: called from a host function of that stream", stream);
        s = it->second;
        r.streams.erase(it);
    }
    stop_stream(s);  // its tasks run first
    return ACL_SUCCESS;
}

aclError aclrtSynchronizeStream(aclrtStream stream) {
    const char *call = "aclrtSynchronizeStream";
    Context *c = nullptr;
    if (aclError rc = enter_ctx(call, &c)) return rc;
    std::shared_ptr<Stream> s;
    if (aclError rc = get_stream(call, stream, c, &s)) return rc;
    return sync_stream(call, s.get(), -1);
}

aclError aclrtSynchronizeStreamWithTimeout(aclrtStream stream, int32_t timeout) {
    const char *call = "aclrtSynchronizeStreamWithTimeout";
    Context *c = nullptr;
    if (aclError rc = enter_ctx(call, &c)) return rc;
    if (timeout < -1)
        return fail(call, ACL_ERROR_INVALID_PARAM, "timeout=%d: expected -1 or a count of ms",
                    timeout);
    std::shared_ptr<Stream> s;
    if (aclError rc = get_stream(call, stream, c, &s)) return rc;
    return sync_stream(call, s.get(), timeout);
}

aclError aclrtSynchronizeDeviceWithTimeout(int32_t timeout) {
    const char *call = "aclrtSynchronizeDeviceWithTimeout";
    Context *c = nullptr;
    if (aclError rc = enter_ctx(call, &c)) return rc;
    if (timeout < -1)
        return fail(call, ACL_ERROR_INVALID_PARAM, "timeout=%d: expected -1 or a count of ms",
                    timeout);
    Runtime &r = rt();
    std::vector<std::shared_ptr<Stream>> streams;
    {
        std::lock_guard<std::mutex> lk(r.mu);
        for (auto &entry : r.streams) {
            if (entry.second->ctx == c) streams.push_back(entry.second);
        }
        if (c->def) streams.push_back(c->def);
    }
    // Every stream of the device; each gets the whole timeout (a bound, not a budget).
    for (auto &st : streams) {
        if (aclError rc = sync_stream(call, st.get(), timeout)) return rc;
    }
    return ACL_SUCCESS;
}

aclError aclrtCreateEvent(aclrtEvent *event) {
    const char *call = "aclrtCreateEvent";
    Context *c = nullptr;
    if (aclError rc = enter_ctx(call, &c)) return rc;
    if (!event) return fail(call, ACL_ERROR_INVALID_PARAM, "event=NULL");
    auto e = std::make_shared<Event>();
    Runtime &r = rt();
    std::lock_guard<std::mutex> lk(r.mu);
    r.events[e.get()] = e;
    *event = e.get();
    return ACL_SUCCESS;
}

aclError aclrtDestroyEvent(aclrtEvent event) {
    const char *call = "aclrtDestroyEvent";
    Context *c = nullptr;
    if (aclError rc = enter_ctx(call, &c)) return rc;
    std::shared_ptr<Event> e;
    if (aclError rc = get_event(call, event, &e)) return rc;
    Runtime &r = rt();
    std::lock_guard<std::mutex> lk(r.mu);
    // Tasks already queued keep the event alive until they have run.
    r.events.erase(event);
    return ACL_SUCCESS;
}

aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream) {
    const char *call = "aclrtRecordEvent";
    Context *c = nullptr;
    if (aclError rc = enter_ctx(call, &c)) return rc;
    std::shared_ptr<Event> e;
    if (aclError rc = get_event(call, event, &e)) return rc;
    std::shared_ptr<Stream> s;
    if (aclError rc = get_stream(call, stream, c, &s, true)) return rc;
    uint64_t n;
    {
        std::lock_guard<std::mutex> lk(e->mu);
        n = ++e->records;
    }
    enqueue(s.get(), [e, n](std::string *) {
        {
            std::lock_guard<std::mutex> lk(e->mu);
            if (n > e->completed) e->completed = n;
        }
        e->cv.notify_all();
        return ACL_SUCCESS;
    });
    return ACL_SUCCESS;
}

aclError aclrtStreamWaitEvent(aclrtStream stream, aclrtEvent event) {
    const char *call = "aclrtStreamWaitEvent";
    Context *c = nullptr;
    if (aclError rc = enter_ctx(call, &c)) return rc;
    std::shared_ptr<Event> e;
    if (aclError rc = get_event(call, event, &e)) return rc;
    std::shared_ptr<Stream> s;
    if (aclError rc = get_stream(call, stream, c, &s, true)) return rc;
    uint64_t target;
    {
        std::lock_guard<std::mutex> lk(e->mu);
        target = e->records;  // the latest record so far; none recorded: no wait
    }
    enqueue(s.get(), [e, target](std::string *) {
        std::unique_lock<std::mutex> lk(e->mu);
        e->cv.wait(lk, [&] { return e->completed >= target; });
        return ACL_SUCCESS;
    });
    return ACL_SUCCESS;
}

aclError aclrtSynchronizeEvent(aclrtEvent event) {
    const char *call = "aclrtSynchronizeEvent";
    Context *c = nullptr;
    if (aclError rc = enter_ctx(call, &c)) return rc;
    std::shared_ptr<Event> e;
    if (aclError rc = get_event(call, event, &e)) return rc;
    std::unique_lock<std::mutex> lk(e->mu);
    uint64_t target = e->records;
    e->cv.wait(lk, [&] { return e->completed >= target; });
    return ACL_SUCCESS;
}

aclError aclrtLaunchHostFunc(aclrtStream stream, aclrtHostFunc fn, void *args) {
    const char *call = "aclrtLaunchHostFunc";
    Context *c = nullptr;
    if (aclError rc = enter_ctx(call, &c)) return rc;
    if (!fn) return fail(call, ACL_ERROR_INVALID_PARAM, "fn=NULL");
    std::shared_ptr<Stream> s;
    if (aclError rc = get_stream(call, stream, c, &s, true)) return rc;
    enqueue(s.get(), [fn, args](std::string *) {
        fn(args);
        return ACL_SUCCESS;
    });
    return ACL_SUCCESS;
}

}  // extern "C"
