/* gpu_probe.c: whether this machine has a GPU the GPU tests can run on, asked of NVIDIA's
 * driver itself: dlopen("libcuda.so.1") from the loader's ordinary search (never the tests'
 * stand-in of tests/cuda, which lacks the driver's cuGetProcAddress_v2), cuInit, a device, a
 * driver new enough for the CUDA runtime the tests were built with.
 *
 *   gpu_probe                  prints "GPU: <name> ..." and exits 0, or
 *                              "SKIPPED: no GPU (<why>)" and exits 77
 *   gpu_probe -- <cmd> [arg]...  the same check, then runs <cmd> in its place (execvp) when
 *                              there is a GPU: every ctest of label gpu starts through it, so
 *                              where there is none ctest lists the test as Skipped
 *                              (SKIP_RETURN_CODE 77) with the reason in its output.
 *
 * Built with -DGPU_PROBE_CUDA_MAJOR=<n>, the major version of the CUDA toolkit that built the
 * tests: a driver below it cannot run their kernels ("driver version is insufficient"). */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#ifndef GPU_PROBE_CUDA_MAJOR
#define GPU_PROBE_CUDA_MAJOR 12
#endif

#define SKIP_CODE 77

/* cuda.h's types, as far as the probe needs them. */
typedef int probe_result;
typedef int probe_device;
typedef probe_result (*init_fn)(unsigned int);
typedef probe_result (*version_fn)(int *);
typedef probe_result (*count_fn)(int *);
typedef probe_result (*get_fn)(probe_device *, int);
typedef probe_result (*name_fn)(char *, int, probe_device);
typedef probe_result (*total_fn)(size_t *, probe_device);
typedef probe_result (*error_fn)(probe_result, const char **);

static int skip(const char *why, const char *detail) {
    printf("SKIPPED: no GPU (%s%s%s)\n", why, detail ? ": " : "", detail ? detail : "");
    fflush(stdout);
    return SKIP_CODE;
}

static const char *error_name(void *lib, probe_result code) {
    error_fn name = (error_fn)dlsym(lib, "cuGetErrorName");
    const char *text = NULL;
    if (name == NULL || name(code, &text) != 0 || text == NULL) return "an unknown error";
    return text;
}

/* 0 with the device line printed when a GPU is usable, else SKIP_CODE with the reason. */
static int probe(void) {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) return skip("cannot load libcuda.so.1, NVIDIA's driver", dlerror());
    /* Every CUDA runtime since 12.0 finds the driver's entry points through it. */
    if (dlsym(lib, "cuGetProcAddress_v2") == NULL) {
        return skip("the libcuda.so.1 found is not NVIDIA's driver (no cuGetProcAddress_v2)", NULL);
    }
    init_fn init = (init_fn)dlsym(lib, "cuInit");
    version_fn version = (version_fn)dlsym(lib, "cuDriverGetVersion");
    count_fn count = (count_fn)dlsym(lib, "cuDeviceGetCount");
    get_fn get = (get_fn)dlsym(lib, "cuDeviceGet");
    name_fn name = (name_fn)dlsym(lib, "cuDeviceGetName");
    total_fn total = (total_fn)dlsym(lib, "cuDeviceTotalMem_v2");
    if (!init || !version || !count || !get || !name || !total) {
        return skip(
            "libcuda.so.1 lacks cuInit, cuDriverGetVersion, cuDeviceGetCount, "
            "cuDeviceGet, cuDeviceGetName or cuDeviceTotalMem_v2",
            NULL);
    }
    probe_result rc = init(0);
    if (rc != 0) {
        char detail[160];
        snprintf(detail, sizeof detail, "%s (%d)", error_name(lib, rc), rc);
        return skip("cuInit failed", detail);
    }
    int n = 0;
    rc = count(&n);
    if (rc != 0 || n < 1) {
        char detail[160];
        snprintf(detail, sizeof detail, "%d devices, %s (%d)", n, error_name(lib, rc), rc);
        return skip("cuDeviceGetCount found none", detail);
    }
    int driver = 0;
    rc = version(&driver);
    if (rc != 0 || driver / 1000 < GPU_PROBE_CUDA_MAJOR) {
        char detail[200];
        snprintf(detail, sizeof detail,
                 "it supports CUDA %d.%d, the tests are built with CUDA %d: use a newer driver "
                 "or an older toolkit's nvcc",
                 driver / 1000, driver % 1000 / 10, GPU_PROBE_CUDA_MAJOR);
        return skip("the driver is too old for these tests", detail);
    }
    probe_device dev = 0;
    char label[256] = "?";
    size_t bytes = 0;
    if (get(&dev, 0) != 0 || name(label, (int)sizeof label, dev) != 0 || total(&bytes, dev) != 0) {
        return skip("cuDeviceGet, cuDeviceGetName or cuDeviceTotalMem of device 0 failed", NULL);
    }
    printf("GPU: %s, %.1f GiB (device 0 of %d), driver for CUDA %d.%d\n", label,
           (double)bytes / (1024.0 * 1024.0 * 1024.0), n, driver / 1000, driver % 1000 / 10);
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 1 && (strcmp(argv[1], "--") != 0 || argc < 3)) {
        fprintf(stderr, "usage: gpu_probe [-- <cmd> [arg]...]\n");
        return 2;
    }
    int rc = probe();
    if (rc != 0 || argc == 1) return rc;
    execvp(argv[2], argv + 2);
    fprintf(stderr, "gpu_probe: cannot run %s: %s\n", argv[2], strerror(errno));
    return 1;
}
