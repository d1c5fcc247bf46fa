# Reads the board table (boards.txt beside this file) for the CMake side: the main build
# (device/mcu/CMakeLists.txt: which boards exist, which toolchain each needs) and the cross
# build of one board (cross/CMakeLists.txt: flags, identity, QEMU machine).
# What must stay true: the column order here is the one documented at the top of boards.txt.
set(_tether_boards_txt ${CMAKE_CURRENT_LIST_DIR}/boards.txt)

# tether_board_names(OUT): every board of the table, in table order.
function(tether_board_names out)
    file(STRINGS ${_tether_boards_txt} lines REGEX "^[a-z0-9]")
    set(names "")
    foreach(line ${lines})
        string(REGEX MATCH "^[^ \t]+" name "${line}")
        list(APPEND names ${name})
    endforeach()
    set(${out} ${names} PARENT_SCOPE)
endfunction()

# tether_board_row(NAME PREFIX): sets PREFIX_FOUND and PREFIX_TOOLCHAIN, _QEMU, _MACHINE, _CORE,
# _TRIPLE, _FPU, _MVE, _RAM_KIB, _CLOCK_HZ, _FEATURES (space-separated, "" for "-"), _FLAGS (a
# list) in the caller's scope.
function(tether_board_row board prefix)
    file(STRINGS ${_tether_boards_txt} lines REGEX "^${board}[ \t]")
    set(${prefix}_FOUND FALSE PARENT_SCOPE)
    if(NOT lines)
        return()
    endif()
    list(GET lines 0 line)
    string(REGEX REPLACE "[ \t]+" ";" cols "${line}")
    list(LENGTH cols n)
    if(n LESS 12)
        message(FATAL_ERROR "boards.txt: the line of '${board}' has ${n} columns, not 12 or more")
    endif()
    set(keys NAME TOOLCHAIN QEMU MACHINE CORE TRIPLE FPU MVE RAM_KIB CLOCK_HZ FEATURES)
    set(i 0)
    foreach(k ${keys})
        list(GET cols ${i} v)
        if(k STREQUAL "FEATURES")
            if(v STREQUAL "-")
                set(v "")
            endif()
            string(REPLACE "," " " v "${v}")
        endif()
        set(${prefix}_${k} "${v}" PARENT_SCOPE)
        math(EXPR i "${i} + 1")
    endforeach()
    list(SUBLIST cols 11 -1 flags)
    set(${prefix}_FLAGS ${flags} PARENT_SCOPE)
    set(${prefix}_FOUND TRUE PARENT_SCOPE)
endfunction()
