/* device_alone.cpp: shmem/device.h alone compiles for the AscendC architecture (its first
 * include, with CANN's kernel_operator.h the only other header it reaches). Compiled by ctest
 * ascendc.compile, never built. */
#include <shmem/device.h>
