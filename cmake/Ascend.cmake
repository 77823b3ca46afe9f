# cmake/Ascend.cmake: CANN's AscendC compiler (bisheng), for the NPU builds of the AscendC
# kernels (the kernel-side API's AscendC architecture, shmem/arch/ascendc.h).
#
# CANN is found through ASCEND_HOME_PATH (set by `source <CANN>/set_env.sh`): bisheng under
# $ASCEND_HOME_PATH/compiler/ccec_compiler/bin, else on PATH. Found, shmem_add_ascendc_kernels()
# builds kernels for the AI core; not found, one configure message says so and nothing NPU is
# built (the AscendC sources are still compiled against a stand-in by ctest ascendc.compile).
# SHMEM_BUILD_CANN (scripts/build.sh -cann) makes CANN required.

option(SHMEM_BUILD_CANN "Require CANN (ASCEND_HOME_PATH) and build the AscendC kernels for the NPU" OFF)
set(SHMEM_ASCENDC_AICORE_ARCH "dav-c220-vec" CACHE STRING
    "AI core the NPU kernels are built for (bisheng --cce-aicore-arch; dav-c220-vec: Atlas A2's vector cores)")

# The kernel-side headers, wherever this file is included from.
cmake_path(SET SHMEM_ASCENDC_DEVICE_INCLUDE NORMALIZE "${CMAKE_CURRENT_LIST_DIR}/../device/include")
set(SHMEM_BISHENG "")
set(SHMEM_ASCEND_HOME "$ENV{ASCEND_HOME_PATH}")
if(SHMEM_ASCEND_HOME STREQUAL "")
    set(_shmem_cann_missing "ASCEND_HOME_PATH unset")
else()
    find_program(_shmem_bisheng bisheng
        HINTS ${SHMEM_ASCEND_HOME}/compiler/ccec_compiler/bin NO_CACHE)
    if(_shmem_bisheng)
        set(SHMEM_BISHENG ${_shmem_bisheng})
        message(STATUS "CANN: ${SHMEM_ASCEND_HOME}, NPU kernels built with ${SHMEM_BISHENG} "
            "for ${SHMEM_ASCENDC_AICORE_ARCH}")
    else()
        set(_shmem_cann_missing
            "no bisheng under ${SHMEM_ASCEND_HOME}/compiler/ccec_compiler/bin nor on PATH")
    endif()
endif()
if(NOT SHMEM_BISHENG)
    if(SHMEM_BUILD_CANN)
        message(FATAL_ERROR "SHMEM_BUILD_CANN: CANN not found (${_shmem_cann_missing}): "
            "run `source <CANN>/set_env.sh` (e.g. /usr/local/Ascend/ascend-toolkit/set_env.sh) "
            "before configuring, or build without -cann")
    endif()
    message(STATUS "CANN not found (${_shmem_cann_missing}): NPU kernels are not built")
endif()

# shmem_add_ascendc_kernels(<name> SOURCES <file.cpp>...): the AscendC kernels in SOURCES,
# compiled by bisheng for the AI core into lib<name>.so the CANN custom-op way (-xcce, one
# shared object holding the kernels and their host-side launch stubs), built with `all`.
# Nothing when CANN was not found.
function(shmem_add_ascendc_kernels name)
    cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "SOURCES")
    if(NOT SHMEM_BISHENG)
        return()
    endif()
    set(out ${CMAKE_CURRENT_BINARY_DIR}/lib${name}.so)
    set(tik ${SHMEM_ASCEND_HOME}/compiler/tikcpp/tikcfw)
    file(GLOB_RECURSE headers ${SHMEM_ASCENDC_DEVICE_INCLUDE}/shmem/*.h)
    add_custom_command(OUTPUT ${out}
        COMMAND ${SHMEM_BISHENG} -xcce --cce-aicore-arch=${SHMEM_ASCENDC_AICORE_ARCH}
            -O2 -std=c++17 -fPIC -shared
            -I${SHMEM_ASCENDC_DEVICE_INCLUDE}
            -I${tik} -I${tik}/impl -I${tik}/interface -I${SHMEM_ASCEND_HOME}/include
            -o ${out} ${arg_SOURCES}
        DEPENDS ${arg_SOURCES} ${headers}
        COMMENT "bisheng: AscendC kernels lib${name}.so (${SHMEM_ASCENDC_AICORE_ARCH})"
        VERBATIM)
    add_custom_target(${name} ALL DEPENDS ${out})
endfunction()
