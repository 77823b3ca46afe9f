/* bench/cuda/floor.cu: the GPU's own device-to-device copy, the floor the puts are held to.
 *
 * One process, no library: `memcpy` is cudaMemcpyAsync device to device; `kernel` is a copy
 * kernel (16-byte loads and stores, grid-stride) by block count, the same work a put does
 * without the library around it. Figure: bytes read + written per second (2 x size; about
 * 3.0 TB/s on an H100 SXM). `--probe` prints the GPU and exits 0, or says why there is none
 * and exits 1 (scripts/bench-cuda.sh asks it before anything else runs).
 *
 * Defaults: --modes memcpy,kernel --sizes 1M:1G --blocks 1,2,4,8,16,32,66,132,264,528
 *           --threads 512 --trials 5 --warmup 2 --iters 0 (0: 256 MiB per repeat) */
#include "common.cuh"

__global__ void floor_copy_kernel(uint4 *dst, const uint4 *src, size_t units, long iters) {
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (long it = 0; it < iters; it++) {
#pragma unroll 4
        for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < units; i += stride) {
            dst[i] = src[i];
        }
    }
}

int main(int argc, char **argv) {
    if (argc == 2 && !strcmp(argv[1], "--probe")) {
        int n = 0;
        cudaError_t err = cudaGetDeviceCount(&n);
        if (err != cudaSuccess || n < 1) {
            printf("no CUDA GPU: cudaGetDeviceCount: %s\n",
                   err != cudaSuccess ? cudaGetErrorString(err) : "0 devices");
            return 1;
        }
        cudaDeviceProp prop;
        BENCH_CUDA(cudaGetDeviceProperties(&prop, 0));
        printf("%d GPU(s); GPU 0: %s, sm_%d%d, %d SMs, %.1f GiB\n", n, prop.name, prop.major,
               prop.minor, prop.multiProcessorCount,
               (double)prop.totalGlobalMem / (1024.0 * 1024 * 1024));
        return 0;
    }
    bench_opts o;
    o.modes = {"memcpy", "kernel"};
    o.size_lo = 1u << 20;
    o.size_hi = 1u << 30;
    o.blocks = {1, 2, 4, 8, 16, 32, 66, 132, 264, 528};
    o.threads = 512;
    o.trials = 5;
    o.warmup = 2;
    o.iters = 0;
    bench_parse(argc, argv, o, "memcpy,kernel", "");
    if (o.size_lo % 16 != 0) bench_fail("--sizes: %zu is not a multiple of 16", o.size_lo);

    bench_gpu_describe(1);
    char *src, *dst;
    BENCH_CUDA(cudaMalloc(&src, o.size_hi));
    BENCH_CUDA(cudaMalloc(&dst, o.size_hi));
    BENCH_CUDA(cudaMemset(src, 0x5a, o.size_hi));
    cudaStream_t stream;
    BENCH_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

    for (const std::string &mode : o.modes) {
        const bool memcpy_mode = mode == "memcpy";
        std::vector<int> block_counts = memcpy_mode ? std::vector<int>{0} : o.blocks;
        for (int blocks : block_counts) {
            for (size_t size : bench_sizes(o)) {
                long iters = o.iters ? o.iters : (long)((256u << 20) / size);
                if (iters < 1) iters = 1;
                auto copy = [&] {
                    if (memcpy_mode) {
                        for (long i = 0; i < iters; i++) {
                            BENCH_CUDA(
                                cudaMemcpyAsync(dst, src, size, cudaMemcpyDeviceToDevice, stream));
                        }
                    } else {
                        floor_copy_kernel<<<blocks, o.threads, 0, stream>>>(
                            (uint4 *)dst, (const uint4 *)src, size / 16, iters);
                    }
                };
                for (int w = 0; w < o.warmup; w++) bench_time_ms(stream, copy);
                std::vector<double> gbps;
                for (int t = 0; t < o.trials; t++) {
                    gbps.push_back(bench_rw_gbps(size, iters, bench_time_ms(stream, copy)));
                }
                bench_fig f = {"floor",        memcpy_mode ? "memcpy_d2d" : "copy_kernel",
                               "cuda",         1,
                               size,           memcpy_mode ? "stream" : "block",
                               blocks,         memcpy_mode ? 0 : o.threads,
                               "rw_bandwidth", "GB/s",
                               o.trials,       iters};
                bench_emit(f, bench_stats(gbps));
            }
        }
    }
    unsigned char tail = 0;
    BENCH_CUDA(cudaMemcpy(&tail, dst + o.size_hi - 1, 1, cudaMemcpyDeviceToHost));
    if (tail != 0x5a) bench_fail("floor: the copy left 0x%02x, not 0x5a", tail);
    BENCH_CUDA(cudaStreamDestroy(stream));
    BENCH_CUDA(cudaFree(dst));
    BENCH_CUDA(cudaFree(src));
    return 0;
}
