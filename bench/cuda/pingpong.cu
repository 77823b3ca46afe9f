/* bench/cuda/pingpong.cu: kernel-side ping-pong latency between 2 PEs, one thread each.
 *
 * Modes: `p` (an 8-byte p of the peer's flag, then quiet; the peer waits on its flag) and
 * `put` (putmem_signal of `size` bytes with a SET of the peer's uint64_t signal; the peer
 * waits on the signal), PE 0 sending first, PE 1 answering. Both PEs' kernels must run at the
 * same time: on one GPU that takes CUDA MPS (the script starts it where it can; without it the
 * two processes' kernels are time-sliced and the figure is the slice, not the library). The
 * loop is timed inside the kernel (%globaltimer) after `warmup` untimed rounds, so the skew
 * between the two processes' launches is not counted. Figure: half a round trip, in us. Flags
 * only grow (each launch continues the count), so nothing is reset between launches.
 *
 * Defaults: --modes p,put --sizes 8:64K (put) --trials 5 --warmup 100 --iters 1000 */
#include "api.cuh"
#include "common.cuh"

enum { MODE_P, MODE_PUT };

__global__ void pingpong_kernel(const void *job, uint64_t *flag, char *data, const char *src,
                                size_t size, int mode, long warmup, long iters, uint64_t base,
                                unsigned long long *out_ns) {
    BENCH_KERNEL_ENTRY(job);
    const int me = BENCH_DEV_MY_PE(), peer = 1 - me;
    unsigned long long t0 = 0;
    for (long i = 0; i < warmup + iters; i++) {
        if (i == warmup) t0 = bench_globaltimer();
        const uint64_t v = base + (uint64_t)i + 1;
        for (int turn = 0; turn < 2; turn++) {
            if ((turn == 0) == (me == 0)) {
                if (mode == MODE_P) {
                    BENCH_UINT64_P(flag, v, peer);
                    BENCH_QUIET();
                } else {
                    BENCH_PUTMEM_SIGNAL(data, src, size, flag, v, peer);
                }
            } else if (mode == MODE_P) {
                BENCH_UINT64_WAIT_GE(flag, v);
            } else {
                BENCH_SIGNAL_WAIT_GE(flag, v);
            }
        }
    }
    *out_ns = bench_globaltimer() - t0;
}

int main(int argc, char **argv) {
    bench_opts o;
    o.modes = {"p", "put"};
    o.size_lo = 8;
    o.size_hi = 64u << 10;
    o.trials = 5;
    o.warmup = 100;
    o.iters = 1000;
    bench_parse(argc, argv, o, "p,put", "thread");

    bench_lib_init();
    const int me = bench_lib_my_pe(), npes = bench_lib_n_pes();
    if (npes != 2) bench_fail("pingpong runs on 2 PEs, not %d", npes);
    bench_gpu_describe(npes);
    if (me == 0 && bench_shared_gpu && !bench_mps) {
        fprintf(stderr,
                "bench: pingpong: the 2 PEs share one GPU without CUDA MPS: their kernels "
                "are time-sliced, the figures measure the slicing\n");
    }
    uint64_t *flag = (uint64_t *)bench_lib_malloc(sizeof(uint64_t));
    char *data = (char *)bench_lib_malloc(o.size_hi);
    char *src = (char *)bench_lib_malloc(o.size_hi);
    BENCH_CUDA(cudaMemset(flag, 0, sizeof(uint64_t)));
    BENCH_CUDA(cudaMemset(src, 0x20 + me, o.size_hi));
    unsigned long long *out_ns;
    BENCH_CUDA(cudaMalloc(&out_ns, sizeof *out_ns));
    BENCH_CUDA(cudaDeviceSynchronize());
    cudaStream_t stream;
    BENCH_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    const void *job = bench_lib_job();
    bench_lib_barrier_all();

    uint64_t base = 0;
    for (const std::string &mode_name : o.modes) {
        const int mode = mode_name == "p" ? MODE_P : MODE_PUT;
        std::vector<size_t> sizes = mode == MODE_P ? std::vector<size_t>{8} : bench_sizes(o);
        for (size_t size : sizes) {
            std::vector<double> us;
            for (int t = 0; t < o.trials; t++) {
                bench_lib_barrier_all();
                pingpong_kernel<<<1, 1, 0, stream>>>(job, flag, data, src, size, mode, o.warmup,
                                                     o.iters, base, out_ns);
                BENCH_CUDA(cudaGetLastError());
                BENCH_CUDA(cudaStreamSynchronize(stream));
                base += (uint64_t)(o.warmup + o.iters);
                unsigned long long ns = 0;
                BENCH_CUDA(cudaMemcpy(&ns, out_ns, sizeof ns, cudaMemcpyDeviceToHost));
                us.push_back((double)ns / 1e3 / (double)o.iters / 2.0);
            }
            if (me == 0) {
                const char *name = mode == MODE_P ? "p+quiet" : "putmem_signal";
                bench_fig f = {"pingpong", name, BENCH_LIB_NAME, npes, size,     "thread",
                               1,          1,    "latency",      "us", o.trials, o.iters};
                bench_emit(f, bench_stats(us));
            }
        }
    }

    /* The check: the last put mode's data is the peer's. */
    if (std::find(o.modes.begin(), o.modes.end(), "put") != o.modes.end()) {
        unsigned char got = 0;
        BENCH_CUDA(cudaMemcpy(&got, data, 1, cudaMemcpyDeviceToHost));
        if (got != 0x20 + (1 - me)) {
            bench_fail("pingpong: PE %d holds 0x%02x, not its peer's 0x%02x: the puts did not land",
                       me, got, 0x20 + (1 - me));
        }
    }
    bench_lib_barrier_all();
    BENCH_CUDA(cudaStreamDestroy(stream));
    BENCH_CUDA(cudaFree(out_ns));
    bench_lib_free(src);
    bench_lib_free(data);
    bench_lib_free(flag);
    bench_lib_finalize();
    return 0;
}
