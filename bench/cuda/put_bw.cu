/* bench/cuda/put_bw.cu: kernel-side put bandwidth, PE 0 to PE 1, by scope (a thread's, a
 * warp's, a block's put) and by block count, 1 MiB to 1 GiB per launch.
 *
 * The buffer is split evenly over the blocks, a block's share over its warps or threads by
 * scope; every launch repeats the whole put `iters` times (enough to move at least 256 MiB, so
 * a launch is long against its own overhead), then quiets. PE 1 only waits at the host barrier:
 * with both PEs on one GPU (the shape a one-GPU machine forces) this is a copy between two
 * processes' allocations of the same GPU, through the peer mapping each library makes.
 * Figure: bytes read + written per second (2 x payload), the unit of the copy floor (floor.cu).
 * After the sweep PE 1 checks that the last put landed.
 *
 * Defaults: --sizes 1M:1G --blocks 1,2,4,8,16,32,66,132,264,528 --threads 512
 *           --scopes thread,warp,block --trials 5 --warmup 2 --iters 0 (0: 256 MiB per launch) */
#include "api.cuh"
#include "common.cuh"

enum { SCOPE_THREAD, SCOPE_WARP, SCOPE_BLOCK };

/* A slice of [0, len) for member `rank` of `size`: 16-byte aligned pieces, the last shorter. */
static __device__ __forceinline__ void put_bw_slice(size_t len, unsigned rank, unsigned size,
                                                    size_t *off, size_t *n) {
    size_t piece = ((len + size - 1) / size + 15) & ~(size_t)15;
    size_t o = (size_t)rank * piece;
    *off = o < len ? o : len;
    *n = o < len ? (len - o < piece ? len - o : piece) : 0;
}

__global__ void put_bw_kernel(const void *job, char *dst, const char *src, size_t bytes, int peer,
                              int scope, long iters) {
    BENCH_KERNEL_ENTRY(job);
    size_t boff, blen;
    put_bw_slice(bytes, blockIdx.x, gridDim.x, &boff, &blen);
    if (blen == 0) return; /* the whole block leaves together: block-scope calls stay collective */
    for (long it = 0; it < iters; it++) {
        if (scope == SCOPE_BLOCK) {
            BENCH_PUTMEM_BLOCK(dst + boff, src + boff, blen, peer);
        } else if (scope == SCOPE_WARP) {
            size_t off, n;
            put_bw_slice(blen, threadIdx.x / 32u, blockDim.x / 32u, &off, &n);
            if (n) BENCH_PUTMEM_WARP(dst + boff + off, src + boff + off, n, peer);
        } else {
            size_t off, n;
            put_bw_slice(blen, threadIdx.x, blockDim.x, &off, &n);
            if (n) BENCH_PUTMEM(dst + boff + off, src + boff + off, n, peer);
        }
    }
    BENCH_QUIET();
}

int main(int argc, char **argv) {
    bench_opts o;
    o.size_lo = 1u << 20;
    o.size_hi = 1u << 30;
    o.blocks = {1, 2, 4, 8, 16, 32, 66, 132, 264, 528};
    o.threads = 512;
    o.scopes = {"thread", "warp", "block"};
    o.trials = 5;
    o.warmup = 2;
    o.iters = 0;
    bench_parse(argc, argv, o, "", "thread,warp,block");
    if (o.threads % 32 != 0)
        bench_fail("--threads %d: not a multiple of 32 (warp scope)", o.threads);

    bench_lib_init();
    const int me = bench_lib_my_pe(), npes = bench_lib_n_pes();
    if (npes != 2) bench_fail("put_bw runs on 2 PEs, not %d", npes);
    bench_gpu_describe(npes);
    if (me == 0 && bench_shared_gpu) {
        fprintf(stderr, "bench: put_bw: the 2 PEs share one GPU (%s): a put is a copy within it\n",
                bench_gpu_name);
    }
    char *src = (char *)bench_lib_malloc(o.size_hi);
    char *dst = (char *)bench_lib_malloc(o.size_hi);
    BENCH_CUDA(cudaMemset(src, 0x10 + me, o.size_hi));
    BENCH_CUDA(cudaMemset(dst, 0, o.size_hi));
    BENCH_CUDA(cudaDeviceSynchronize());
    cudaStream_t stream;
    BENCH_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    const void *job = bench_lib_job();

    for (const std::string &scope_name : o.scopes) {
        const int scope = scope_name == "thread" ? SCOPE_THREAD
                          : scope_name == "warp" ? SCOPE_WARP
                                                 : SCOPE_BLOCK;
        for (int blocks : o.blocks) {
            for (size_t size : bench_sizes(o)) {
                long iters = o.iters;
                if (iters == 0) {
                    iters = (long)((256u << 20) / size);
                    if (iters < 1) iters = 1;
                }
                bench_lib_barrier_all();
                if (me == 0) {
                    auto launch = [&] {
                        put_bw_kernel<<<blocks, o.threads, 0, stream>>>(job, dst, src, size, 1,
                                                                        scope, iters);
                    };
                    for (int w = 0; w < o.warmup; w++) bench_time_ms(stream, launch);
                    std::vector<double> gbps;
                    for (int t = 0; t < o.trials; t++) {
                        gbps.push_back(bench_rw_gbps(size, iters, bench_time_ms(stream, launch)));
                    }
                    std::string name = "putmem_" + scope_name;
                    bench_fig f = {"put_bw", name.c_str(), BENCH_LIB_NAME,
                                   npes,     size,         scope_name.c_str(),
                                   blocks,   o.threads,    "rw_bandwidth",
                                   "GB/s",   o.trials,     iters};
                    bench_emit(f, bench_stats(gbps));
                }
                bench_lib_barrier_all();
            }
        }
    }

    /* The check: PE 0 puts its whole buffer once more; PE 1 finds PE 0's bytes at both ends. */
    bench_lib_barrier_all();
    if (me == 0) {
        put_bw_kernel<<<132, o.threads, 0, stream>>>(job, dst, src, o.size_hi, 1, SCOPE_BLOCK, 1);
        BENCH_CUDA(cudaGetLastError());
        BENCH_CUDA(cudaStreamSynchronize(stream));
    }
    bench_lib_barrier_all();
    if (me == 1) {
        unsigned char head = 0, tail = 0;
        BENCH_CUDA(cudaMemcpy(&head, dst, 1, cudaMemcpyDeviceToHost));
        BENCH_CUDA(cudaMemcpy(&tail, dst + o.size_hi - 1, 1, cudaMemcpyDeviceToHost));
        if (head != 0x10 || tail != 0x10) {
            bench_fail("put_bw: PE 1 holds 0x%02x...0x%02x, not PE 0's 0x10: the puts did not land",
                       head, tail);
        }
    }
    bench_lib_barrier_all();
    BENCH_CUDA(cudaStreamDestroy(stream));
    bench_lib_free(dst);
    bench_lib_free(src);
    bench_lib_finalize();
    return 0;
}
