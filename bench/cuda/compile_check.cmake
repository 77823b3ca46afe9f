# ctest cuda.bench_compile: the GPU benchmarks (bench/cuda/*.cu) compile with nvcc against this
# library's kernel-side API (shmem/device.h, CUDA architecture) to sm_90 objects, warnings as
# errors, with their host side (host_shmem.cpp against <aclshmem.h>); NVSHMEM's variant needs
# NVSHMEM's headers, which only the GPU machine has (scripts/bench-cuda.sh builds it there).
# nvcc is the one ctest cuda.compile uses (tests/cuda_kernels/CMakeLists.txt finds it).
#
#   cmake -DNVCC=<nvcc> -DSRC=<source tree> -DWORK=<scratch dir> -P compile_check.cmake
cmake_minimum_required(VERSION 3.25)

if(NOT NVCC OR NOT SRC OR NOT WORK)
    message(FATAL_ERROR
        "compile_check.cmake: pass -DNVCC=<nvcc> -DSRC=<source tree> -DWORK=<scratch dir>")
endif()
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})

set(flags -std=c++17 -arch=sm_90 -c -I${SRC}/device/include -I${SRC}/cpp/include
    -I${SRC}/bench/cuda -Werror all-warnings -Xcompiler=-Wall,-Wextra,-Werror)
file(GLOB sources ${SRC}/bench/cuda/*.cu)
list(APPEND sources ${SRC}/bench/cuda/host_shmem.cpp)
list(LENGTH sources n)
if(n LESS 6)
    message(FATAL_ERROR "cuda.bench_compile: found ${n} sources under ${SRC}/bench/cuda: fewer "
        "than the benchmarks (put_bw, onstream, pingpong, barrier, floor, host_shmem.cpp)")
endif()

set(failed)
foreach(src IN LISTS sources)
    get_filename_component(name ${src} NAME)
    execute_process(COMMAND ${NVCC} ${flags} ${src} -o ${WORK}/${name}.o
        RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 300)
    if(rc EQUAL 0 AND EXISTS ${WORK}/${name}.o)
        message(STATUS "ok      bench/cuda/${name}")
    else()
        message(STATUS "FAILED  bench/cuda/${name} (exit ${rc})\n${out}${err}")
        list(APPEND failed bench/cuda/${name})
    endif()
endforeach()
if(failed)
    message(FATAL_ERROR "cuda.bench_compile: ${n} files checked, these failed: ${failed}")
endif()
message(STATUS "cuda.bench_compile: ${n} files compiled against shmem/device.h")
