#!/bin/sh
# Compiles every freestanding rpc source (tether_rpc_tiny) for Cortex-M3 (thumb, freestanding,
# -Werror) together with the crt core it needs, checks that nothing outside the freestanding set
# is referenced, and prints the code size. Exits 77 (ctest: Skipped) when arm-none-eabi-gcc is
# not installed.
# usage: cross_check.sh RPC_DIR CRT_DIR DLPACK_INCLUDE_DIR OUT_DIR RPC_SOURCES(;-list) CRT_SOURCES(;-list)
set -eu
rpc=$1 crt=$2 dlpack=$3 out=$4 rpc_srcs=$5 crt_srcs=$6
if ! command -v arm-none-eabi-gcc >/dev/null 2>&1; then
    echo "SKIP: arm-none-eabi-gcc not found; scripts/setup installs gcc-arm-none-eabi"
    exit 77
fi
mkdir -p "$out/rpc" "$out/crt"
flags="-mcpu=cortex-m3 -mthumb -ffreestanding -std=c11 -Os -Wall -Wextra -Werror"
inc="-I$rpc/include -I$crt/include -I$dlpack"
rpc_objs=""
for src in $(echo "$rpc_srcs" | tr ';' ' '); do
    obj="$out/rpc/$(basename "$src" .c).o"
    # -nostdinc plus the compiler's own freestanding headers: only stdint/stddef/stdbool/stdarg
    # and our headers are visible, except string.h which is allowed explicitly.
    arm-none-eabi-gcc $flags $inc -c "$rpc/$src" -o "$obj"
    # no hosted header may be pulled in
    arm-none-eabi-gcc $flags $inc -M "$rpc/$src" | tr ' \\' '\n\n' | grep -E '\.h$' |
        grep -v -E "(^$rpc/|^$crt/|^$dlpack/|/(stdint|stddef|stdbool|stdarg|string|float|limits)\.h$|/stdint-gcc\.h$|/_ansi\.h$|/newlib\.h$|/_newlib_version\.h$|/config\.h$|/features\.h$|/ieeefp\.h$|/reent\.h$|/_default_types\.h$|/_types\.h$|/_intsup\.h$|/_stdint\.h$|/lock\.h$|/cdefs\.h$|/string\.h$|/_locale\.h$|/strings\.h$|/sys/_.*\.h$|/machine/.*\.h$)" \
        > "$out/rpc/$(basename "$src" .c).hdrs" || true
    if [ -s "$out/rpc/$(basename "$src" .c).hdrs" ]; then
        echo "$src includes headers outside the freestanding set:"
        cat "$out/rpc/$(basename "$src" .c).hdrs"
        exit 1
    fi
    rpc_objs="$rpc_objs $obj"
done
crt_objs=""
for src in $(echo "$crt_srcs" | tr ';' ' '); do
    obj="$out/crt/$(basename "$src" .c).o"
    arm-none-eabi-gcc $flags $inc -c "$crt/$src" -o "$obj"
    crt_objs="$crt_objs $obj"
done
defined=$(arm-none-eabi-nm --defined-only $rpc_objs $crt_objs | awk 'NF==3{print $3}' | sort -u)
undefined=$(arm-none-eabi-nm -u $rpc_objs | awk 'NF==2{print $2}' | sort -u |
    grep -v -x -F "$defined" |
    grep -v -E '^(tether_platform_|memcpy$|memset$|memmove$|memcmp$|memchr$|strlen$|strcmp$|strncmp$|__aeabi_|__gnu_thumb1_case)' || true)
if [ -n "$undefined" ]; then
    echo "rpc freestanding parts need symbols a freestanding target does not have:"
    echo "$undefined"
    exit 1
fi
arm-none-eabi-size -t $rpc_objs | tail -1 |
    awk '{print "tether_rpc_tiny for cortex-m3: text " $1 " data " $2 " bss " $3 " bytes"}'
