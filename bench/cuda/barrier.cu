/* bench/cuda/barrier.cu: kernel-side barrier_all latency, one block per PE.
 *
 * Scopes: `thread` (a one-thread block) and `block` (--threads threads, every one calling).
 * Ours is aclshmem_barrier_all (every thread of every block calls it), NVSHMEM's is
 * nvshmemx_barrier_all_block: in a one-block launch the two are the same operation. As for
 * ping-pong, every PE's kernel must run at once (CUDA MPS on a shared GPU), and the loop is
 * timed inside the kernel after `warmup` untimed barriers. Figure: us per barrier.
 *
 * Defaults: --scopes thread,block --threads 256 --trials 5 --warmup 100 --iters 1000 */
#include "api.cuh"
#include "common.cuh"

__global__ void barrier_kernel(const void *job, long warmup, long iters,
                               unsigned long long *out_ns) {
    BENCH_KERNEL_ENTRY(job);
    for (long i = 0; i < warmup; i++) BENCH_BARRIER_ALL_BLOCK();
    const unsigned long long t0 = bench_globaltimer();
    for (long i = 0; i < iters; i++) BENCH_BARRIER_ALL_BLOCK();
    const unsigned long long t1 = bench_globaltimer();
    if (threadIdx.x == 0) *out_ns = t1 - t0;
}

int main(int argc, char **argv) {
    bench_opts o;
    o.scopes = {"thread", "block"};
    o.threads = 256;
    o.trials = 5;
    o.warmup = 100;
    o.iters = 1000;
    bench_parse(argc, argv, o, "", "thread,block");

    bench_lib_init();
    const int me = bench_lib_my_pe(), npes = bench_lib_n_pes();
    bench_gpu_describe(npes);
    if (me == 0 && bench_shared_gpu && !bench_mps) {
        fprintf(stderr,
                "bench: barrier: %d PEs share a GPU without CUDA MPS: their kernels are "
                "time-sliced, the figures measure the slicing\n",
                npes);
    }
    unsigned long long *out_ns;
    BENCH_CUDA(cudaMalloc(&out_ns, sizeof *out_ns));
    cudaStream_t stream;
    BENCH_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    const void *job = bench_lib_job();

    for (const std::string &scope : o.scopes) {
        const int threads = scope == "thread" ? 1 : o.threads;
        std::vector<double> us;
        for (int t = 0; t < o.trials; t++) {
            bench_lib_barrier_all();
            barrier_kernel<<<1, threads, 0, stream>>>(job, o.warmup, o.iters, out_ns);
            BENCH_CUDA(cudaGetLastError());
            BENCH_CUDA(cudaStreamSynchronize(stream));
            unsigned long long ns = 0;
            BENCH_CUDA(cudaMemcpy(&ns, out_ns, sizeof ns, cudaMemcpyDeviceToHost));
            us.push_back((double)ns / 1e3 / (double)o.iters);
        }
        if (me == 0) {
            bench_fig f = {"barrier", "barrier_all", BENCH_LIB_NAME, npes, 0,        scope.c_str(),
                           1,         threads,       "latency",      "us", o.trials, o.iters};
            bench_emit(f, bench_stats(us));
        }
    }
    bench_lib_barrier_all();
    BENCH_CUDA(cudaStreamDestroy(stream));
    BENCH_CUDA(cudaFree(out_ns));
    bench_lib_finalize();
    return 0;
}
