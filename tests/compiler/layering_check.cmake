# test_compiler_layering: the compiler does not depend on the host library (docs/architecture.md,
# "Rules that keep the folders apart"): no source or header under compiler/ includes a header of
# host/lib/include/tether/, and no static library built from compiler/ needs a symbol that the
# host library defines (nm). The host links the compiler, never the other way (the .pb reader is
# registered by the host: host/lib/npy_pb.c).
# What must stay true: the check reads the built libraries it is given, so it sees what a link
# would see; it fails naming the file or the library and the symbol.
#
# Arguments (-D): SRC (source root), NM, HOST_LIB (libtether_host.a), LIBS (;-list of the static
# libraries of compiler/).
cmake_minimum_required(VERSION 3.16)
foreach(v SRC NM HOST_LIB LIBS)
    if(NOT DEFINED ${v})
        message(FATAL_ERROR "layering_check: -D${v}= is required")
    endif()
endforeach()

set(problems "")

# 1. includes
file(GLOB host_headers RELATIVE ${SRC}/host/lib/include ${SRC}/host/lib/include/tether/*.h)
if(NOT host_headers)
    message(FATAL_ERROR "layering_check: no headers in ${SRC}/host/lib/include/tether")
endif()
file(GLOB_RECURSE sources ${SRC}/compiler/*.c ${SRC}/compiler/*.h)
foreach(f ${sources})
    file(STRINGS ${f} lines REGEX "^[ \t]*#[ \t]*include")
    foreach(l ${lines})
        foreach(h ${host_headers})
            string(FIND "${l}" "\"${h}\"" at)
            string(FIND "${l}" "<${h}>" at2)
            if(NOT at EQUAL -1 OR NOT at2 EQUAL -1)
                file(RELATIVE_PATH rel ${SRC} ${f})
                string(APPEND problems "  ${rel} includes the host header ${h}\n")
            endif()
        endforeach()
    endforeach()
endforeach()

# 2. symbols: what compiler/ libraries leave undefined must not be the host library's
execute_process(COMMAND ${NM} -g --defined-only ${HOST_LIB} OUTPUT_VARIABLE host_nm
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
    message(FATAL_ERROR "layering_check: ${NM} ${HOST_LIB} failed")
endif()
string(REGEX MATCHALL "[ \t][TDBR][ \t]+[A-Za-z_][A-Za-z0-9_]*" defs "${host_nm}")
set(host_syms "")
foreach(d ${defs})
    string(REGEX REPLACE "^[ \t][TDBR][ \t]+" "" s "${d}")
    list(APPEND host_syms ${s})
endforeach()
list(LENGTH host_syms nhost)
if(nhost LESS 10)
    message(FATAL_ERROR "layering_check: only ${nhost} symbols defined in ${HOST_LIB}")
endif()
foreach(lib ${LIBS})
    execute_process(COMMAND ${NM} -u ${lib} OUTPUT_VARIABLE und RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
        message(FATAL_ERROR "layering_check: ${NM} -u ${lib} failed")
    endif()
    string(REGEX MATCHALL "U[ \t]+[A-Za-z_][A-Za-z0-9_]*" refs "${und}")
    foreach(r ${refs})
        string(REGEX REPLACE "^U[ \t]+" "" s "${r}")
        list(FIND host_syms ${s} at)
        if(NOT at EQUAL -1)
            get_filename_component(name ${lib} NAME)
            string(APPEND problems "  ${name} needs ${s} from the host library\n")
        endif()
    endforeach()
endforeach()

if(problems)
    message(FATAL_ERROR "the compiler depends on the host library:\n${problems}")
endif()
message(STATUS "compiler/: no host header included, no host symbol needed")
