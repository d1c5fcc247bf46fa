#!/usr/bin/env bash
# `cmake --install` of this build into a temporary prefix, then as a user would: a CMake project
# with find_package(tether) (tether::host + tether::compiler) compiles and runs a model on the
# installed tetherd; programs built with pkg-config (tether-host, with and without --static);
# the installed CLI finds the installed tetherd (local:) and, when the firmware is built, the
# installed firmware for the QEMU board (no build tree, no $TETHER_FIRMWARE); the installed Python
# package, when built, runs a model on the installed tetherd.
# usage: test_install.sh BUILD_DIR SOURCE_DIR C_COMPILER [EXTRA_FLAGS]
set -euo pipefail
build=$1 src=$2 cc=$3 extra=${4:-}
work=$(mktemp -d "${TMPDIR:-/tmp}/tinstall.XXXXXX")
board_pid=
cleanup() {
    [ -z "$board_pid" ] || kill "$board_pid" 2>/dev/null || true
    [ -z "$board_pid" ] || wait "$board_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" > "$work/install.log"
for f in bin/tether bin/tetherd lib/cmake/tether/tetherConfig.cmake lib/pkgconfig/tether-host.pc \
    include/tether/host.h include/tether/compiler.h include/tether/crt.h share/doc/tether/rpc.md; do
    [ -e "$prefix/$f" ] || { echo "FAIL: $f not installed"; exit 1; }
done

# find_package consumer
cmake -S "$src/tests/install/consumer" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_C_COMPILER="$cc" -DCMAKE_C_FLAGS="$extra" -DCMAKE_EXE_LINKER_FLAGS="$extra" \
    > "$work/consumer.log" 2>&1 || { cat "$work/consumer.log"; exit 1; }
cmake --build "$work/consumer" >> "$work/consumer.log" 2>&1 || { cat "$work/consumer.log"; exit 1; }
PATH="$prefix/bin:$PATH" TETHER_TETHERD="$prefix/bin/tetherd" \
    "$work/consumer/consumer" "$src/examples/kws/kws.json" "$work"

# pkg-config consumer
flags=$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs --static tether-host)
# shellcheck disable=SC2086
"$cc" -std=c11 $extra "$src/tests/install/consumer/npy_roundtrip.c" -o "$work/npy_roundtrip" $flags
"$work/npy_roundtrip" "$work/x.npy" "$work/mfcc.npy"
# ... and without --static: the .pc alone links a program that uses sessions (docs/install.md)
flags=$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs tether-host)
# shellcheck disable=SC2086
"$cc" -std=c11 $extra "$src/tests/install/consumer/session_info.c" -o "$work/session_info" \
    $flags > "$work/pc.log" 2>&1 || { echo "FAIL: pkg-config --libs tether-host (no --static)"
    head -n 20 "$work/pc.log"; exit 1; }
env -u TETHER_DEVICE TETHER_TETHERD="$prefix/bin/tetherd" "$work/session_info" > "$work/pc.txt" ||
    { echo "FAIL: session_info"; cat "$work/pc.txt"; exit 1; }
grep -q "^session ok" "$work/pc.txt" || { echo "FAIL: session_info"; exit 1; }
echo "a program built with pkg-config (no --static) reached the installed tetherd"

# the installed CLI: tetherd beside it (local:), no build tree
cd "$work"
env -u TETHER_TETHERD -u TETHER_FIRMWARE -u TETHER_DEVICE "$prefix/bin/tether" info > info.txt
grep -q "^triple" info.txt || { echo "FAIL: installed tether info"; cat info.txt; exit 1; }
echo "installed tether reached the installed tetherd"

# the installed Python package (when this build has it): numpy in and out, the installed tetherd
pkg=$(find "$prefix" -path '*/dist-packages/tether/__init__.py' -print -quit)
if [ -n "$pkg" ] && [ -x /usr/bin/python3 ]; then
    env -u TETHER_TETHERD PYTHONPATH="$(dirname "$(dirname "$pkg")")" /usr/bin/python3 - \
        "$src/examples/kws/kws.json" > python.txt 2>&1 << 'PY' ||
import sys, numpy as np, tether
x = np.linspace(-1, 1, 490, dtype=np.float32).reshape(1, 1, 49, 10)
with tether.Session("local:") as s:
    out = s.run_model(sys.argv[1], x)
ref = tether.reference(sys.argv[1], x)
(name,) = out.keys()
assert np.allclose(out[name], ref[name], rtol=1e-4, atol=1e-5), (out[name], ref[name])
print("python ok", name, out[name].shape)
PY
        { echo "FAIL: the installed Python package"; cat python.txt; exit 1; }
    grep -q "python ok" python.txt || { echo "FAIL: python"; cat python.txt; exit 1; }
    echo "the installed Python package ran a model on the installed tetherd"
fi

# ... and the installed firmware, on the QEMU board exported over TCP
if [ -f "$prefix/share/tether/firmware/mps2-an385/firmware.json" ] &&
    command -v qemu-system-arm > /dev/null; then
    for try in 1 2 3; do # a port that may be taken: try another
        port=$((20000 + ($$ * 7 + try * 131) % 30000))
        "$src/scripts/qemu-board" --icount --tcp-serial "$port" \
            "$prefix/share/tether/firmware/mps2-an385/tether-fw.elf" > board.url 2>/dev/null &
        board_pid=$!
        for _ in $(seq 200); do
            [ -s board.url ] && break
            kill -0 "$board_pid" 2>/dev/null || break
            sleep 0.05
        done
        [ -s board.url ] && break
        wait "$board_pid" 2>/dev/null || true
        board_pid=
    done
    [ -s board.url ] || { echo "FAIL: the QEMU board did not start"; exit 1; }
    url=$(head -n 1 board.url)
    env -u TETHER_FIRMWARE "$prefix/bin/tether" run "$src/examples/kws/kws.json" --device "$url" \
        --in mfcc.npy > mcu.txt 2>&1 || true
    if grep -q "linked at 0x20050000 for mps2-an385" mcu.txt; then
        echo "installed tether linked against the installed firmware"
    else
        echo "FAIL: the installed tether did not use the installed firmware"; cat mcu.txt; exit 1
    fi
fi
echo "install test: ok"
