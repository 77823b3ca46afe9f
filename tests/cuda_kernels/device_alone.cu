/* device_alone.cu: shmem/device.h alone compiles for the CUDA architecture (its first include,
 * with the CUDA toolkit's headers the only others it reaches). Compiled by ctest cuda.compile,
 * never built into a program. */
#include <shmem/device.h>
