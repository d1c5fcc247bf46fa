# Cross build for aarch64 Linux boards and phones (Debian's gcc-aarch64-linux-gnu and the arm64
# -dev packages of multiarch, installed by scripts/setup):
#
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake \
#         -DTETHER_DEVICE_ONLY=ON
#   cmake --build build-aarch64 --target tetherd
#
# pkg-config reads only the arm64 .pc files, so libuv, msgpack-c and libsodium resolve to
# /usr/lib/aarch64-linux-gnu; programs built here run on this machine under qemu-aarch64 (the
# CMake cross-compiling emulator) and on the board itself.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)

set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")

set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
