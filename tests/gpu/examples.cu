/* examples.cu: the CUDA examples' kernels (examples/cuda/allgather.cu, kv_shuffle.cu, included
 * as they are) launched on a GPU with real data, under shmemrun with SHMEM_DEVICE=cuda, for
 * several rounds with new data each round; every PE copies its result back with cudaMemcpy and
 * checks every element.
 *   allgather    count floats per PE (not a multiple of the block count), every PE's slice in
 *                every PE's output
 *   kv_shuffle   KV blocks held by one PE and owned by another (an uneven mapping, some PEs
 *                holding or owning none), every owned block in global order
 * Both kernels wait for every PE's blocks, so they are launched cooperatively (every block
 * resident at once, shmem/arch/cuda.h), the same block count on every PE. */
#include <shmem.h>
#include <shmem/launch.h>
#include <stdint.h>
#include <stdio.h>

#include <vector>

#include "allgather.cu"
#include "gpu_check.h"
#include "kv_shuffle.cu"

#define BLOCKS 4
#define THREADS 256
#define ROUNDS 3

static bool coop = false;

/* Launches `kernel(job, args)` as BLOCKS x THREADS on `s`, cooperatively where the GPU can. */
template <typename A>
static void launch(void (*kernel)(const void *, A), const void *job, A args, cudaStream_t s) {
    void *argv[] = {(void *)&job, (void *)&args};
    if (coop) {
        CUDA_OK(cudaLaunchCooperativeKernel((const void *)kernel, dim3(BLOCKS), dim3(THREADS), argv,
                                            0, s));
    } else {
        CUDA_OK(cudaLaunchKernel((const void *)kernel, dim3(BLOCKS), dim3(THREADS), argv, 0, s));
    }
}

/* Element i of PE pe's input in round r: small integers, exact as floats. */
static float ag_value(int pe, size_t i, int r) {
    return (float)(pe * 131 + (int)(i % 9973) + r * 17);
}

static void run_allgather(const void *job, cudaStream_t s) {
    const size_t count = 100003;
    int me = shmem_my_pe(), n = shmem_n_pes();
    float *input = (float *)shmem_malloc(count * sizeof(float));
    float *output = (float *)shmem_calloc((size_t)n * count, sizeof(float));
    int32_t *arrived = (int32_t *)shmem_calloc((size_t)n, sizeof(int32_t));
    CHECK(input && output && arrived, "allgather: shmem_malloc of %zu floats", (n + 1) * count);
    std::vector<float> host(count), got((size_t)n * count);
    for (int r = 1; r <= ROUNDS; r++) {
        for (size_t i = 0; i < count; i++) host[i] = ag_value(me, i, r);
        CUDA_OK(cudaMemcpy(input, host.data(), count * sizeof(float), cudaMemcpyHostToDevice));
        GPU_SETTLE();
        allgather_cuda_args a = {input, output, arrived, count, r};
        launch(shmem_allgather_cuda, job, a, s);
        GPU_SYNC(s, "shmem_allgather_cuda");
        CUDA_OK(cudaMemcpy(got.data(), output, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
        size_t bad = 0, first = 0;
        for (size_t k = 0; k < got.size(); k++) {
            if (got[k] != ag_value((int)(k / count), k % count, r) && bad++ == 0) first = k;
        }
        CHECK(bad == 0,
              "allgather round %d: %zu of %zu floats wrong, first output[%zu] (PE %zu's "
              "element %zu) = %g, want %g",
              r, bad, got.size(), first, first / count, first % count, got[first],
              ag_value((int)(first / count), first % count, r));
        shmem_barrier_all(); /* every PE has checked before the next round overwrites */
    }
    shmem_free(arrived);
    shmem_free(output);
    shmem_free(input);
    if (me == 0) {
        printf("examples: allgather ok (%zu floats per PE, %d blocks, %d rounds)\n", count, BLOCKS,
               ROUNDS);
    }
}

/* The KV blocks' mapping: block j is held by holder(j) and owned by owner(j), unevenly. */
static int kv_holder(size_t j, int n) { return (int)((j * 7 + j / 5) % (size_t)n); }
static int kv_owner(size_t j, int n) { return (int)((j * 3 + j / 7 + 1) % (size_t)n); }
static float kv_value(size_t j, size_t i, int r) {
    return (float)((int)(j % 1009) * 8 + (int)(i % 7) + r * 3);
}

static void run_kv_shuffle(const void *job, cudaStream_t s) {
    const size_t total = 96, bsize = 1000;
    int me = shmem_my_pe(), n = shmem_n_pes();
    /* Each held block goes to the next free slot of its owner, in global order; the buffers are
     * symmetric, so every PE allocates the largest counts. */
    std::vector<int> send_owner;
    std::vector<size_t> send_slot, held_ids, owned_ids, filled((size_t)n), held_by((size_t)n);
    for (size_t j = 0; j < total; j++) {
        int h = kv_holder(j, n), o = kv_owner(j, n);
        if (h == me) {
            send_owner.push_back(o);
            send_slot.push_back(filled[(size_t)o]);
            held_ids.push_back(j);
        }
        if (o == me) owned_ids.push_back(j);
        filled[(size_t)o]++;
        held_by[(size_t)h]++;
    }
    size_t max_held = 1, max_owned = 1;
    for (int pe = 0; pe < n; pe++) {
        if (held_by[(size_t)pe] > max_held) max_held = held_by[(size_t)pe];
        if (filled[(size_t)pe] > max_owned) max_owned = filled[(size_t)pe];
    }
    float *held = (float *)shmem_malloc(max_held * bsize * sizeof(float));
    float *owned = (float *)shmem_calloc(max_owned * bsize, sizeof(float));
    int32_t *arrived = (int32_t *)shmem_calloc(1, sizeof(int32_t));
    CHECK(held && owned && arrived, "kv_shuffle: shmem_malloc of %zu floats",
          (max_held + max_owned) * bsize);
    int *d_owner = NULL;
    size_t *d_slot = NULL;
    size_t n_held = held_ids.size(), n_owned = owned_ids.size();
    CUDA_OK(cudaMalloc((void **)&d_owner, (n_held + 1) * sizeof(int)));
    CUDA_OK(cudaMalloc((void **)&d_slot, (n_held + 1) * sizeof(size_t)));
    if (n_held > 0) {
        CUDA_OK(
            cudaMemcpy(d_owner, send_owner.data(), n_held * sizeof(int), cudaMemcpyHostToDevice));
        CUDA_OK(
            cudaMemcpy(d_slot, send_slot.data(), n_held * sizeof(size_t), cudaMemcpyHostToDevice));
    }
    std::vector<float> host(max_held * bsize), got(max_owned * bsize);
    for (int r = 1; r <= ROUNDS; r++) {
        for (size_t k = 0; k < n_held; k++) {
            for (size_t i = 0; i < bsize; i++) host[k * bsize + i] = kv_value(held_ids[k], i, r);
        }
        CUDA_OK(cudaMemcpy(held, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
        GPU_SETTLE();
        shmem_barrier_all(); /* every PE's held blocks are this round's before any PE sends */
        kv_cuda_args a = {held, owned, arrived, d_owner, d_slot, n_held, n_owned, bsize, r};
        launch(shmem_kv_shuffle_cuda, job, a, s);
        GPU_SYNC(s, "shmem_kv_shuffle_cuda");
        CUDA_OK(cudaMemcpy(got.data(), owned, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
        size_t bad = 0, first = 0;
        for (size_t k = 0; k < n_owned * bsize; k++) {
            if (got[k] != kv_value(owned_ids[k / bsize], k % bsize, r) && bad++ == 0) first = k;
        }
        CHECK(bad == 0,
              "kv_shuffle round %d: %zu of %zu floats wrong, first owned[%zu] (KV "
              "block %zu, element %zu) = %g, want %g",
              r, bad, n_owned * bsize, first, owned_ids[first / bsize], first % bsize, got[first],
              kv_value(owned_ids[first / bsize], first % bsize, r));
        shmem_barrier_all(); /* every PE has checked before the next round overwrites */
    }
    CUDA_OK(cudaFree(d_slot));
    CUDA_OK(cudaFree(d_owner));
    shmem_free(arrived);
    shmem_free(owned);
    shmem_free(held);
    if (me == 0) {
        printf("examples: kv_shuffle ok (%zu KV blocks of %zu floats, %d blocks, %d rounds)\n",
               total, bsize, BLOCKS, ROUNDS);
    }
}

int main(void) {
    shmem_init();
    gpu_pe = shmem_my_pe();
    const void *job = shmemx_job_state_device();
    CHECK(job != NULL, "the heap is not in GPU memory: run under shmemrun with SHMEM_DEVICE=cuda");
    int dev = 0, can = 0;
    CUDA_OK(cudaGetDevice(&dev));
    CUDA_OK(cudaDeviceGetAttribute(&can, cudaDevAttrCooperativeLaunch, dev));
    coop = can != 0;
    cudaStream_t s;
    CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    run_allgather(job, s);
    run_kv_shuffle(job, s);
    CUDA_OK(cudaStreamDestroy(s));
    shmem_barrier_all();
    if (gpu_pe == 0) printf("examples: %d PEs checked\n", shmem_n_pes());
    shmem_finalize();
    return 0;
}
