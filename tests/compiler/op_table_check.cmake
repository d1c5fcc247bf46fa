# test_compiler_op_table: a row of the operator table (compiler/src/ir/ops.def) without its
# kernels does not build. The script copies compiler/include and compiler/src into the build
# tree, adds one row to the copy's table, and compiles (-fsyntax-only, the compiler's own
# warning flags) every source of the copy that names an operator (a case expected to fail: until
# one fails for the stated reason), for each case:
#   control                  no row                                       builds
#   elementwise_row          a UNARY row with its formula                 builds (the row is all)
#   binary_row               a BINARY row with its formula                builds
#   unary_without_formula    a UNARY row whose FORMULA is empty           fails (interp_formula.c)
#   integer_row_without_iformula  a NUM row whose IFORMULA is empty      fails (interp_formula.c)
#   unary_reading_y          a UNARY formula that reads the second input  fails
#   family_without_kernels   a POOL row: no per-operator switch names it  fails, naming the op
# What must stay true: the script never touches the source tree (only WORK); a case that should
# fail must fail for the stated reason (its message is checked), not for a broken copy (the
# control case proves the copy builds).
#
# Arguments (-D): CC, SRC (the compiler/ folder), WORK (scratch folder), INCS (include folders,
# ;-list), FLAGS (compile flags, ;-list).
cmake_minimum_required(VERSION 3.16)
foreach(v CC SRC WORK INCS)
    if(NOT DEFINED ${v})
        message(FATAL_ERROR "op_table_check: -D${v}= is required")
    endif()
endforeach()

file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
file(GLOB_RECURSE all_sources RELATIVE ${SRC}/src ${SRC}/src/*.c)
set(sources)
foreach(f ${all_sources})
    file(READ ${SRC}/src/${f} text)
    string(FIND "${text}" "TETHER_OP_" at)
    if(NOT at EQUAL -1)
        list(APPEND sources ${f})
    endif()
endforeach()
# the interpreter's sources first: a row without its formula fails there, which settles a FAIL
# case after a few compiles (the order changes nothing else)
set(first ${sources})
list(FILTER first INCLUDE REGEX "^interp/")
list(FILTER sources EXCLUDE REGEX "^interp/")
list(PREPEND sources ${first})
list(LENGTH sources nsources)
if(nsources LESS 5)
    message(FATAL_ERROR "op_table_check: only ${nsources} sources name an operator: ${sources}")
endif()

set(failures 0)
# check(NAME ROW EXPECT [REGEX]): ROW "" = the table as it is; EXPECT PASS or FAIL; a FAIL case
# must print REGEX.
function(check name row expect regex)
    set(t ${WORK}/${name})
    file(COPY ${SRC}/include ${SRC}/src DESTINATION ${t})
    if(row)
        file(READ ${t}/src/ir/ops.def def)
        string(FIND "${def}" "#define TETHER_OP_LIST(X) \\\n" at)
        if(at EQUAL -1)
            message(FATAL_ERROR "op_table_check: no '#define TETHER_OP_LIST(X) \\' in ops.def")
        endif()
        string(REPLACE "#define TETHER_OP_LIST(X) \\\n" "#define TETHER_OP_LIST(X) \\\n    ${row} \\\n"
                       def "${def}")
        file(WRITE ${t}/src/ir/ops.def "${def}")
    endif()
    set(incflags)
    foreach(i ${INCS})
        if(i STREQUAL "${SRC}/include")
            set(i ${t}/include)
        endif()
        list(APPEND incflags -I${i})
    endforeach()
    set(failed 0)
    set(log "")
    set(compiled 0)
    foreach(f ${sources})
        execute_process(COMMAND ${CC} -fsyntax-only ${FLAGS} ${incflags} ${t}/src/${f}
                        RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
        math(EXPR compiled "${compiled} + 1")
        if(NOT rc EQUAL 0)
            set(failed 1)
            string(APPEND log "---- ${f}\n${out}${err}")
            # a FAIL case's verdict is settled once a file failed for the stated reason: the
            # sources after it cannot change it (saves most of the case's compiles)
            if(expect STREQUAL "FAIL" AND log MATCHES "${regex}")
                break()
            endif()
        endif()
    endforeach()
    if(expect STREQUAL "PASS" AND failed)
        message(SEND_ERROR "${name}: expected to build, did not:\n${log}")
        math(EXPR n "${failures} + 1")
        set(failures ${n} PARENT_SCOPE)
    elseif(expect STREQUAL "FAIL" AND NOT failed)
        message(SEND_ERROR "${name}: expected the build to fail, it built")
        math(EXPR n "${failures} + 1")
        set(failures ${n} PARENT_SCOPE)
    elseif(expect STREQUAL "FAIL" AND NOT log MATCHES "${regex}")
        message(SEND_ERROR "${name}: failed, but without '${regex}':\n${log}")
        math(EXPR n "${failures} + 1")
        set(failures ${n} PARENT_SCOPE)
    else()
        message(STATUS "${name}: ${expect} as expected (${compiled} of ${nsources} sources compiled)")
    endif()
endfunction()

check(control "" PASS "")
check(elementwise_row
      "X(TEST_OP, \"test_op\", UNARY, NONE, 1, 1, \"\", 0, sqrtf(x) + 1.0f, , FLOAT, )" PASS "")
check(binary_row
      "X(TEST_OP, \"test_op\", BINARY, NONE, 2, 2, \"\", 0, x * y + x, , NUM, wadd(wmul(x, y), x))"
      PASS "")
check(unary_without_formula "X(TEST_OP, \"test_op\", UNARY, NONE, 1, 1, \"\", 0, , , FLOAT, )" FAIL
      "interp_formula\\.c")
check(integer_row_without_iformula
      "X(TEST_OP, \"test_op\", UNARY, NONE, 1, 1, \"\", 0, x + 1.0f, , NUM, )" FAIL "interp_formula\\.c")
check(unary_reading_y "X(TEST_OP, \"test_op\", UNARY, NONE, 1, 1, \"\", 0, x + y, , FLOAT, )" FAIL
      "y.* undeclared|undeclared identifier .y")
check(family_without_kernels "X(TEST_OP, \"test_op\", POOL, NONE, 1, 1, \"\", 0, , , F32, )" FAIL
      "TETHER_OP_TEST_OP.* not handled in switch")
if(failures)
    message(FATAL_ERROR "op_table_check: ${failures} case(s) wrong (the copies are in ${WORK})")
endif()
file(REMOVE_RECURSE ${WORK})
