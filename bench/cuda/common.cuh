/* bench/cuda/common.cuh: what every GPU benchmark shares: its command line, CUDA error checks,
 * timing with CUDA events, the statistics of repeats and the JSON line of one figure (the keys
 * of bench/common.h's programs, plus the GPU's: scope, blocks, threads, gpu, shared_gpu, mps).
 *
 * Options (each program documents its defaults):
 *   --sizes LO:HI    bytes, powers of two from LO to HI (suffixes K, M, G: binary)
 *   --blocks LIST    block counts, comma-separated
 *   --threads N      threads per block
 *   --scopes LIST    thread,warp,block
 *   --modes LIST     the program's own variants
 *   --trials N       timed repeats per figure (the median is the figure)
 *   --iters N        operations per repeat
 *   --warmup N       untimed repeats before the first timed one
 * A figure's line carries its median, min and max over the trials. */
#ifndef BENCH_CUDA_COMMON_CUH
#define BENCH_CUDA_COMMON_CUH

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <algorithm>
#include <string>
#include <vector>

#include <cuda_runtime.h>

/* Ends the process with one line naming the CUDA call and its error. */
#define BENCH_CUDA(call)                                                                           \
    do {                                                                                           \
        cudaError_t bench_err_ = (call);                                                           \
        if (bench_err_ != cudaSuccess) {                                                           \
            fprintf(stderr, "bench: %s:%d: %s: %s (%s)\n", __FILE__, __LINE__, #call,              \
                    cudaGetErrorName(bench_err_), cudaGetErrorString(bench_err_));                 \
            exit(3);                                                                               \
        }                                                                                          \
    } while (0)

static inline void bench_fail(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static inline void bench_fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("bench: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

struct bench_opts {
    size_t size_lo = 0, size_hi = 0;
    std::vector<int> blocks;
    int threads = 0;
    std::vector<std::string> scopes;
    std::vector<std::string> modes;
    int trials = 0;
    long iters = 0;
    int warmup = 0;
};

/* A byte count with an optional binary suffix; ends the process on anything else. */
static inline size_t bench_parse_size(const char *opt, const char *s) {
    char *end = nullptr;
    unsigned long long v = strtoull(s, &end, 10);
    switch (*end) {
    case 'K':
    case 'k':
        v <<= 10;
        ++end;
        break;
    case 'M':
    case 'm':
        v <<= 20;
        ++end;
        break;
    case 'G':
    case 'g':
        v <<= 30;
        ++end;
        break;
    default: break;
    }
    if (end == s || *end != '\0' || v == 0) bench_fail("%s %s: not a byte count", opt, s);
    return (size_t)v;
}

static inline long bench_parse_long(const char *opt, const char *s, long lo, long hi) {
    char *end = nullptr;
    long v = strtol(s, &end, 10);
    if (end == s || *end != '\0' || v < lo || v > hi) {
        bench_fail("%s %s: not an integer in [%ld, %ld]", opt, s, lo, hi);
    }
    return v;
}

static inline std::vector<std::string> bench_split(const char *s) {
    std::vector<std::string> out;
    std::string cur;
    for (const char *p = s;; ++p) {
        if (*p == ',' || *p == '\0') {
            if (!cur.empty()) out.push_back(cur);
            cur.clear();
            if (*p == '\0') break;
        } else {
            cur += *p;
        }
    }
    return out;
}

/* Parses argv over the defaults in `o`; `modes_allowed`/`scopes_allowed` (comma lists) bound
 * the --modes and --scopes values. */
static inline void bench_parse(int argc, char **argv, bench_opts &o, const char *modes_allowed,
                               const char *scopes_allowed) {
    for (int i = 1; i < argc; i++) {
        const char *opt = argv[i];
        if (i + 1 >= argc) bench_fail("%s: needs a value", opt);
        const char *v = argv[++i];
        if (!strcmp(opt, "--sizes")) {
            std::string s(v);
            size_t colon = s.find(':');
            std::string lo = s.substr(0, colon),
                        hi = colon == std::string::npos ? lo : s.substr(colon + 1);
            o.size_lo = bench_parse_size(opt, lo.c_str());
            o.size_hi = bench_parse_size(opt, hi.c_str());
            if (o.size_hi < o.size_lo) bench_fail("--sizes %s: HI is below LO", v);
        } else if (!strcmp(opt, "--blocks")) {
            o.blocks.clear();
            for (const std::string &b : bench_split(v)) {
                o.blocks.push_back((int)bench_parse_long(opt, b.c_str(), 1, 1 << 20));
            }
        } else if (!strcmp(opt, "--threads")) {
            o.threads = (int)bench_parse_long(opt, v, 1, 1024);
        } else if (!strcmp(opt, "--scopes") || !strcmp(opt, "--modes")) {
            const bool scopes = !strcmp(opt, "--scopes");
            std::vector<std::string> allowed = bench_split(scopes ? scopes_allowed : modes_allowed);
            std::vector<std::string> got = bench_split(v);
            for (const std::string &g : got) {
                if (std::find(allowed.begin(), allowed.end(), g) == allowed.end()) {
                    bench_fail("%s %s: %s is not one of %s", opt, v, g.c_str(),
                               scopes ? scopes_allowed : modes_allowed);
                }
            }
            (scopes ? o.scopes : o.modes) = got;
        } else if (!strcmp(opt, "--trials")) {
            o.trials = (int)bench_parse_long(opt, v, 1, 1000);
        } else if (!strcmp(opt, "--iters")) {
            o.iters = bench_parse_long(opt, v, 1, 1L << 30);
        } else if (!strcmp(opt, "--warmup")) {
            o.warmup = (int)bench_parse_long(opt, v, 0, 1000);
        } else {
            bench_fail("%s: unknown option (see the header of bench/cuda/common.cuh)", opt);
        }
    }
}

/* The powers of two of [lo, hi]. */
static inline std::vector<size_t> bench_sizes(const bench_opts &o) {
    std::vector<size_t> out;
    for (size_t s = o.size_lo; s <= o.size_hi && s != 0; s *= 2) out.push_back(s);
    return out;
}

struct bench_stat {
    double median, min, max;
};

static inline bench_stat bench_stats(std::vector<double> v) {
    if (v.empty()) bench_fail("no trials to summarise");
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    double med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
    return {med, v.front(), v.back()};
}

/* One figure. */
struct bench_fig {
    const char *bench; /* program: put_bw, pingpong, barrier, onstream, floor */
    const char *name;  /* the figure: putmem_block, p+quiet, memcpy_d2d, ... */
    const char *lib;   /* shmem | nvshmem | cuda (the floor) */
    int npes;
    size_t size;       /* bytes per operation (per launch for put_bw) */
    const char *scope; /* thread | warp | block | host | stream */
    int blocks, threads;
    const char *metric; /* latency | rw_bandwidth */
    const char *unit;   /* us | GB/s */
    int trials;
    long iters;
};

/* What the line says of the GPU: its name, whether the job's PEs share it (more PEs on this
 * node than GPUs: the only shape a one-GPU machine gives), whether CUDA MPS was on (the script
 * sets BENCH_MPS=1 when it started the daemon: without it the PEs' kernels are time-sliced,
 * not concurrent). */
static char bench_gpu_name[256];
static int bench_shared_gpu;
static int bench_mps;

static inline void bench_gpu_describe(int npes) {
    int dev = 0, ndev = 0;
    BENCH_CUDA(cudaGetDevice(&dev));
    BENCH_CUDA(cudaGetDeviceCount(&ndev));
    cudaDeviceProp prop;
    BENCH_CUDA(cudaGetDeviceProperties(&prop, dev));
    snprintf(bench_gpu_name, sizeof bench_gpu_name, "%s", prop.name);
    for (char *p = bench_gpu_name; *p; ++p) {
        if (*p == '"' || *p == '\\') *p = '_';
    }
    bench_shared_gpu = npes > ndev;
    const char *mps = getenv("BENCH_MPS");
    bench_mps = mps && !strcmp(mps, "1");
}

static inline void bench_emit(const bench_fig &f, bench_stat s) {
    printf(
        "{\"bench\":\"%s\",\"name\":\"%s\",\"lib\":\"%s\",\"npes\":%d,\"size\":%zu,"
        "\"scope\":\"%s\",\"blocks\":%d,\"threads\":%d,\"metric\":\"%s\",\"unit\":\"%s\","
        "\"median\":%.6g,\"min\":%.6g,\"max\":%.6g,\"trials\":%d,\"iters\":%ld,"
        "\"gpu\":\"%s\",\"shared_gpu\":%s,\"mps\":%s}\n",
        f.bench, f.name, f.lib, f.npes, f.size, f.scope, f.blocks, f.threads, f.metric, f.unit,
        s.median, s.min, s.max, f.trials, f.iters, bench_gpu_name,
        bench_shared_gpu ? "true" : "false", bench_mps ? "true" : "false");
    fflush(stdout);
}

/* Milliseconds `work` takes on `stream`, between two events around it. */
template <typename F>
static inline double bench_time_ms(cudaStream_t stream, F work) {
    cudaEvent_t a, b;
    BENCH_CUDA(cudaEventCreate(&a));
    BENCH_CUDA(cudaEventCreate(&b));
    BENCH_CUDA(cudaEventRecord(a, stream));
    work();
    BENCH_CUDA(cudaGetLastError());
    BENCH_CUDA(cudaEventRecord(b, stream));
    BENCH_CUDA(cudaEventSynchronize(b));
    float ms = 0;
    BENCH_CUDA(cudaEventElapsedTime(&ms, a, b));
    BENCH_CUDA(cudaEventDestroy(a));
    BENCH_CUDA(cudaEventDestroy(b));
    return ms;
}

/* Bytes read + written per second, in GB/s (1e9), for `bytes` copied `times` in `ms`: a copy
 * reads each byte once and writes it once, so put and the device-to-device floor count alike. */
static inline double bench_rw_gbps(size_t bytes, long times, double ms) {
    return 2.0 * (double)bytes * (double)times / (ms * 1e-3) / 1e9;
}

/* The GPU's global nanosecond clock, for loops timed inside one kernel (ping-pong, barrier):
 * events around the launch would count the skew between two processes' launches. */
static __device__ __forceinline__ unsigned long long bench_globaltimer(void) {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

#endif /* BENCH_CUDA_COMMON_CUH */
