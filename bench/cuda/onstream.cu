/* bench/cuda/onstream.cu: the host's put on a CUDA stream, PE 0 to PE 1: ours
 * (aclshmemx_putmem_on_stream) against NVSHMEM's (nvshmemx_putmem_on_stream).
 *
 * Each repeat enqueues `iters` puts of `size` bytes and a quiet on one stream, between two
 * events: the figures are the time per put (latency, us: what a small put costs the stream)
 * and bytes read + written per second (the copy floor's unit). PE 1 only waits at the host
 * barrier. After the sweep PE 1 checks that the puts landed.
 *
 * Defaults: --sizes 8:1G --trials 5 --warmup 2 --iters 100 (fewer for large sizes: at most
 * 1 GiB per repeat) */
#include "api.cuh"
#include "common.cuh"

int main(int argc, char **argv) {
    bench_opts o;
    o.size_lo = 8;
    o.size_hi = 1u << 30;
    o.trials = 5;
    o.warmup = 2;
    o.iters = 100;
    bench_parse(argc, argv, o, "", "stream");

    bench_lib_init();
    const int me = bench_lib_my_pe(), npes = bench_lib_n_pes();
    if (npes != 2) bench_fail("onstream runs on 2 PEs, not %d", npes);
    bench_gpu_describe(npes);
    char *src = (char *)bench_lib_malloc(o.size_hi);
    char *dst = (char *)bench_lib_malloc(o.size_hi);
    BENCH_CUDA(cudaMemset(src, 0x30 + me, o.size_hi));
    BENCH_CUDA(cudaMemset(dst, 0, o.size_hi));
    BENCH_CUDA(cudaDeviceSynchronize());
    cudaStream_t stream;
    BENCH_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

    for (size_t size : bench_sizes(o)) {
        long iters = o.iters;
        if ((size_t)iters * size > (1u << 30)) iters = (long)((1u << 30) / size);
        if (iters < 1) iters = 1;
        bench_lib_barrier_all();
        if (me == 0) {
            auto puts = [&] {
                for (long i = 0; i < iters; i++)
                    bench_lib_putmem_on_stream(dst, src, size, 1, stream);
                bench_lib_quiet_on_stream(stream);
            };
            for (int w = 0; w < o.warmup; w++) bench_time_ms(stream, puts);
            std::vector<double> us, gbps;
            for (int t = 0; t < o.trials; t++) {
                double ms = bench_time_ms(stream, puts);
                us.push_back(ms * 1e3 / (double)iters);
                gbps.push_back(bench_rw_gbps(size, iters, ms));
            }
            bench_fig f = {
                "onstream", "putmem_on_stream", BENCH_LIB_NAME, npes,     size, "stream", 0,
                0,          "latency",          "us",           o.trials, iters};
            bench_emit(f, bench_stats(us));
            f.metric = "rw_bandwidth";
            f.unit = "GB/s";
            bench_emit(f, bench_stats(gbps));
        }
        bench_lib_barrier_all();
    }

    bench_lib_barrier_all();
    if (me == 1) {
        unsigned char head = 0, tail = 0;
        BENCH_CUDA(cudaMemcpy(&head, dst, 1, cudaMemcpyDeviceToHost));
        BENCH_CUDA(cudaMemcpy(&tail, dst + o.size_hi - 1, 1, cudaMemcpyDeviceToHost));
        if (head != 0x30 || tail != 0x30) {
            bench_fail(
                "onstream: PE 1 holds 0x%02x...0x%02x, not PE 0's 0x30: the puts did not "
                "land",
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
