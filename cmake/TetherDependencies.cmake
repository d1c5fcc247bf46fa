# Third-party libraries, all from Debian packages installed by scripts/setup. Each becomes an
# imported target (PkgConfig::NAME) that the folder CMakeLists link against.
find_package(PkgConfig REQUIRED)

function(tether_require_pc var module package)
    pkg_check_modules(${var} REQUIRED IMPORTED_TARGET ${module})
    if(NOT ${var}_FOUND)
        message(FATAL_ERROR "${module} not found: run scripts/setup (Debian package ${package})")
    endif()
endfunction()

tether_require_pc(LIBUV libuv libuv1-dev)
tether_require_pc(MSGPACK msgpack libmsgpack-dev)
tether_require_pc(SODIUM libsodium libsodium-dev)
if(NOT TETHER_DEVICE_ONLY) # the host side: reports, tests, ONNX import
    tether_require_pc(CJSON libcjson libcjson-dev)
    tether_require_pc(CMOCKA cmocka libcmocka-dev)
    tether_require_pc(PROTOBUF_C libprotobuf-c libprotobuf-c-dev)
    tether_require_pc(HIREDIS hiredis libhiredis-dev) # the device pool (host/lib/pool.c)
    tether_require_pc(LIBZIP libzip libzip-dev) # .npz archives (host/lib/npz.c)
endif()

# dlpack is header-only. The cross (arm-none-eabi) builds must not see the host's /usr/include,
# so the one header is mirrored into the build tree and that folder is what every target uses.
find_path(TETHER_DLPACK_DIR dlpack/dlpack.h)
if(NOT TETHER_DLPACK_DIR)
    message(FATAL_ERROR "dlpack/dlpack.h not found: run scripts/setup (Debian package "
                        "libdlpack-dev)")
endif()
set(TETHER_DLPACK_MIRROR ${CMAKE_BINARY_DIR}/dlpack-include)
configure_file(${TETHER_DLPACK_DIR}/dlpack/dlpack.h ${TETHER_DLPACK_MIRROR}/dlpack/dlpack.h
               COPYONLY)
add_library(tether_dlpack INTERFACE)
# installed consumers find dlpack/dlpack.h where Debian puts it (libdlpack-dev)
target_include_directories(tether_dlpack INTERFACE $<BUILD_INTERFACE:${TETHER_DLPACK_MIRROR}>)

find_library(TETHER_LIBM m)
find_package(Threads REQUIRED)
