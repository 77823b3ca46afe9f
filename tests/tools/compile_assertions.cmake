# compile_assertions.cmake: the half of the declaration checks (check_standin_decls.cmake,
# tests/cann/check_decls.cmake) that compiles their static assertions.
#
#   compile_assertions(<stem> <c prelude> <c++ prelude> <c body> <c++ body> <what> <out var>)
#
# writes OUT/<stem>.c (<c prelude>, then <c body>) and OUT/<stem>.cc (likewise for C++),
# compiles each with -fsyntax-only by CC (-std=c11) and CXX (-std=c++17) with -I INCLUDE, prints
# "FAIL (<lang>): <what>:" and the compiler's words for each that fails, and sets <out var> to
# 1 when one did, else 0. OUT, INCLUDE, CC and CXX are the calling script's variables.
function(compile_assertions stem c_prelude cxx_prelude c_body cxx_body what out_var)
    file(MAKE_DIRECTORY ${OUT})
    file(WRITE ${OUT}/${stem}.c "${c_prelude}\n${c_body}")
    file(WRITE ${OUT}/${stem}.cc "${cxx_prelude}\n${cxx_body}")
    set(failed 0)
    foreach(lang c cc)
        if(lang STREQUAL "c")
            set(compiler ${CC})
            set(std -std=c11)
        else()
            set(compiler ${CXX})
            set(std -std=c++17)
        endif()
        execute_process(
            COMMAND ${compiler} ${std} -fsyntax-only -I${INCLUDE} ${OUT}/${stem}.${lang}
            RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
        if(NOT rc EQUAL 0)
            message("FAIL (${lang}): ${what}:\n${out}${err}")
            set(failed 1)
        endif()
    endforeach()
    set(${out_var} ${failed} PARENT_SCOPE)
endfunction()
