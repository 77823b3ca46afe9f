# ctest cuda.compile: the kernel-side API's CUDA architecture (shmem/arch/cuda.h) and the CUDA
# kernels compile with nvcc to objects for sm_90, with every warning an error (nvcc's
# `-Werror all-warnings`, the host compiler's -Wall -Wextra -Werror for the host pass). No GPU
# and no CUDA install are needed: nvcc from PyPI (scripts/build.sh -uttests puts it into
# <build>/venv) or a system CUDA (tests/cuda_kernels/CMakeLists.txt finds either).
#
#   cmake -DNVCC=<nvcc> -DSRC=<source tree> -DWORK=<scratch dir> -P compile_check.cmake
#
# Checked, each on its own:
# - tests/cuda_kernels/*.cu: shmem/device.h alone, and every API family at every scope (the
#   thread's forms, _warp, _block) from `__global__` kernels;
# - examples/cuda/*.cu: the CUDA ports of the examples: allgather's and kv_shuffle's kernels,
#   and the fused operators (matmul_allreduce, allgather_matmul, matmul_reduce_scatter,
#   moe_dispatch_combine) as whole programs, their host side against <shmem.h> (cpp/include);
# - tests/device/with_host_header.c, compiled as CUDA, must fail with the header's message that
#   says to split the kernel-side and host headers;
# - rust/core/src/device/cuda_stream.ptx, the cuda device's stream kernels: ptxas assembles them.
# The C kernels of examples/ (allgather.c & co.) are not compiled here: they are plain host
# functions run by shmemx_cpu_launch, which nvcc rightly refuses to let call __device__
# routines; examples/cuda/ holds their CUDA form (the operators' compute there is a block's
# tile GEMM of examples/cuda/common.cuh instead of the host's CBLAS).
# Every file is compiled even after a failure; the check fails when any did.
cmake_minimum_required(VERSION 3.25)

if(NOT NVCC OR NOT SRC OR NOT WORK)
    message(FATAL_ERROR
        "compile_check.cmake: pass -DNVCC=<nvcc> -DSRC=<source tree> -DWORK=<scratch dir>")
endif()
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})

set(common -std=c++17 -arch=sm_90 -c -I${SRC}/device/include)
set(strict -Werror all-warnings -Xcompiler=-Wall,-Wextra,-Werror)
# The kernel tests see the kernel-side headers only (device_alone.cu proves they need no host
# header); the example programs also see the host API's.
file(GLOB kernel_sources ${SRC}/tests/cuda_kernels/*.cu)
file(GLOB example_sources ${SRC}/examples/cuda/*.cu)
set(cuda_sources ${kernel_sources} ${example_sources})

set(failed)
set(checked 0)
function(compile_one src expect_ok)
    cmake_parse_arguments(PARSE_ARGV 2 arg "" "" "FLAGS")
    file(RELATIVE_PATH rel ${SRC} ${src})
    string(MAKE_C_IDENTIFIER ${rel} obj)
    execute_process(COMMAND ${NVCC} ${common} ${arg_FLAGS} ${src} -o ${WORK}/${obj}.o
        RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 300)
    if(expect_ok AND rc EQUAL 0 AND EXISTS ${WORK}/${obj}.o)
        message(STATUS "ok      ${rel}")
    elseif(NOT expect_ok AND NOT rc EQUAL 0 AND "${out}${err}" MATCHES "declare the same CANN names")
        message(STATUS "ok      ${rel} (refused, as it must be)")
    else()
        message(STATUS "FAILED  ${rel} (exit ${rc})\n${out}${err}")
        set(failed ${failed} ${rel} PARENT_SCOPE)
    endif()
    math(EXPR n "${checked} + 1")
    set(checked ${n} PARENT_SCOPE)
endfunction()

execute_process(COMMAND ${NVCC} --version OUTPUT_VARIABLE version RESULT_VARIABLE rc TIMEOUT 60)
if(NOT rc EQUAL 0)
    message(FATAL_ERROR "cuda.compile: ${NVCC} --version failed (exit ${rc})")
endif()
string(REGEX MATCH "release [0-9.]+" release "${version}")
message(STATUS "cuda.compile: ${NVCC} (${release}), sm_90")

foreach(src IN LISTS kernel_sources)
    compile_one(${src} TRUE FLAGS ${strict})
endforeach()
foreach(src IN LISTS example_sources)
    compile_one(${src} TRUE FLAGS ${strict} -I${SRC}/cpp/include)
endforeach()
compile_one(${SRC}/tests/device/with_host_header.c FALSE FLAGS -x cu -I${SRC}/cpp/include)

# The library's own stream kernels (PTX text the cuda device loads at run time): ptxas, beside
# nvcc, assembles them for sm_90 and for the oldest architecture CUDA 13 builds for (sm_75).
get_filename_component(nvcc_dir ${NVCC} DIRECTORY)
find_program(PTXAS ptxas HINTS ${nvcc_dir} NO_DEFAULT_PATH)
set(ptx ${SRC}/rust/core/src/device/cuda_stream.ptx)
foreach(arch sm_90 sm_75)
    execute_process(COMMAND ${PTXAS} --warning-as-error -arch=${arch} ${ptx}
            -o ${WORK}/cuda_stream.${arch}.cubin
        RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
    if(PTXAS AND rc EQUAL 0)
        message(STATUS "ok      rust/core/src/device/cuda_stream.ptx (ptxas, ${arch})")
    else()
        message(STATUS "FAILED  rust/core/src/device/cuda_stream.ptx (ptxas ${PTXAS}, ${arch}, "
            "exit ${rc})\n${out}${err}")
        list(APPEND failed "cuda_stream.ptx(${arch})")
    endif()
    math(EXPR checked "${checked} + 1")
endforeach()

list(LENGTH cuda_sources n_cuda)
if(n_cuda LESS 8)
    message(FATAL_ERROR "cuda.compile: found ${n_cuda} CUDA sources under ${SRC}: fewer than "
        "the tree holds, the globs are wrong")
endif()
if(failed)
    message(FATAL_ERROR "cuda.compile: ${checked} files checked, these failed: ${failed}")
endif()
message(STATUS "cuda.compile: ${checked} files checked for the CUDA architecture")
