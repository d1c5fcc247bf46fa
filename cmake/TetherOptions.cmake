# Build options. Auto-detected options default to what this machine can do; set them explicitly
# (-DTETHER_WITH_OPENCL=OFF) to force a feature off. Forcing one ON without its toolchain fails
# at configure time with a message naming what is missing.

option(TETHER_SANITIZE "Build with -fsanitize=address,undefined" OFF)
# Only the device side: crt, rpc and tetherd, needing libuv, msgpack-c and libsodium alone (for a
# cross build with cmake/toolchains/aarch64-linux-gnu.cmake; no host tools, tests or firmware).
option(TETHER_DEVICE_ONLY "Build only crt, rpc and tetherd (device cross builds)" OFF)
option(TETHER_WERROR "Treat compiler warnings as errors (scripts/test and CI turn it on)" OFF)
# bench/'s programs (run by scripts/bench, never by ctest) in `all`; OFF leaves them out but for
# what a test needs (scripts/test's sanitizer tree; the release tree builds them, so they still
# build with warnings as errors).
option(TETHER_WITH_BENCH "Build the benchmarks of bench/ with all" ON)

find_program(TETHER_ARM_GCC arm-none-eabi-gcc)
if(TETHER_ARM_GCC AND NOT TETHER_DEVICE_ONLY)
    set(_tether_mcu_default ON)
else()
    set(_tether_mcu_default OFF)
endif()
option(TETHER_WITH_MCU "Build Cortex-M firmware and cross checks (needs arm-none-eabi-gcc)"
       ${_tether_mcu_default})
if(TETHER_WITH_MCU AND NOT TETHER_ARM_GCC)
    message(FATAL_ERROR "TETHER_WITH_MCU=ON but arm-none-eabi-gcc was not found (scripts/setup "
                        "installs gcc-arm-none-eabi)")
endif()

# tetherd for aarch64 boards and phones, cross-built in its own tree (build/aarch64) with
# cmake/toolchains/aarch64-linux-gnu.cmake: needs gcc-aarch64-linux-gnu and the arm64 -dev
# packages of libuv, msgpack-c and libsodium (multiarch; scripts/setup installs them).
find_program(TETHER_AARCH64_GCC aarch64-linux-gnu-gcc)
set(_tether_a64_default OFF)
if(TETHER_AARCH64_GCC AND NOT TETHER_DEVICE_ONLY AND
   EXISTS /usr/lib/aarch64-linux-gnu/pkgconfig/libuv.pc AND
   EXISTS /usr/lib/aarch64-linux-gnu/pkgconfig/msgpack.pc AND
   EXISTS /usr/lib/aarch64-linux-gnu/pkgconfig/libsodium.pc)
    set(_tether_a64_default ON)
endif()
option(TETHER_WITH_AARCH64_TETHERD "Cross-build tetherd for aarch64 Linux (build/aarch64)"
       ${_tether_a64_default})

# OpenCL: the ICD loader plus headers (ocl-icd-opencl-dev, opencl-c-headers).
find_package(PkgConfig REQUIRED)
pkg_check_modules(TETHER_OPENCL_PC QUIET IMPORTED_TARGET OpenCL)
if(TETHER_OPENCL_PC_FOUND AND NOT TETHER_DEVICE_ONLY)
    set(_tether_ocl_default ON)
else()
    set(_tether_ocl_default OFF)
endif()
option(TETHER_WITH_OPENCL "Build OpenCL support (texture scopes, OpenCL kernels)"
       ${_tether_ocl_default})
if(TETHER_WITH_OPENCL AND NOT TETHER_OPENCL_PC_FOUND)
    message(FATAL_ERROR "TETHER_WITH_OPENCL=ON but the OpenCL ICD loader was not found "
                        "(scripts/setup installs ocl-icd-opencl-dev and opencl-c-headers)")
endif()

# libFuzzer targets need clang; they are built in their own tree by scripts/test.
if(CMAKE_C_COMPILER_ID MATCHES "Clang" AND NOT TETHER_DEVICE_ONLY)
    set(_tether_fuzz_default ON)
else()
    set(_tether_fuzz_default OFF)
endif()
option(TETHER_WITH_FUZZ "Build libFuzzer targets (clang only)" ${_tether_fuzz_default})

if(TETHER_SANITIZE)
    add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=all
                        -fno-omit-frame-pointer)
    add_link_options(-fsanitize=address,undefined)
endif()
