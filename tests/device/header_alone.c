/* header_alone.c: the kernel-side headers compile with nothing but device/include on the path
 * (no host header of the library), in C (header_alone.c) and C++ (header_alone.cc, the same
 * code). Built, not run. */
#include <shmem/device.h>
#include <shmem/launch.h>

int shmem_device_header_alone(int pe);
int shmem_device_header_alone(int pe) {
    int32_t *p = (int32_t *)aclshmem_ptr((void *)0, pe);
    return p != 0 ? aclshmem_my_pe() : aclshmemx_block_num();
}
