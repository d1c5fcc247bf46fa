#!/usr/bin/env bash
# The UART link through a noisy line: KWS runs (`tether run`) to a device behind
# tether_uart_noise, which flips bits and drops bytes between two ptys, at three noise levels:
# clean, 0.1% of bytes flipped + 0.01% dropped, 1% flipped. Each run is bounded by 30 s; its
# outputs are compared byte for byte with a clean-line run of the same artifact. Prints per
# level the runs correct / wrong / failed, the median and slowest run, the median as a ratio to
# the clean line's (measured in the same run), and the bytes on the line per run.
#
# usage: bench/uart_noise/run.sh [--runs N] [--baud B] [--cache] [--board] [BUILD_DIR]
#   --runs N   runs per level (default 50)
#   --baud B   pace the line to B bits/s each way (default 0: as fast as the ptys go)
#   --cache    keep tetherd's upload cache on (default off: every run uploads the model)
#   --board    the device is the MCU firmware on QEMU mps2-an385 (-icount) instead of
#              `tetherd --uart`; each run compiles and links the model for it
# Not part of the tests; scripts/bench uart_noise runs it.
set -euo pipefail
runs=50 baud=0 cache=off board=0 dir=
while [ $# -gt 0 ]; do
    case $1 in
    --runs) runs=$2; shift ;;
    --baud) baud=$2; shift ;;
    --cache) cache=on ;;
    --board) board=1 ;;
    -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    -*) echo "uart_noise: unknown option '$1' (try --help)" >&2; exit 2 ;;
    *) dir=$1 ;;
    esac
    shift
done
here=$(cd "$(dirname "$0")/../.." && pwd)
dir=$(cd "${dir:-$here/build}" && pwd)
tether=$dir/host/cli/tether
tetherd=$dir/device/tetherd/tetherd
relay=$dir/bench/uart_noise/tether_uart_noise
fw=$dir/device/mcu/mps2-an385/tether-fw.elf
for f in "$tether" "$tetherd" "$relay"; do
    [ -x "$f" ] || { echo "uart_noise: $f is missing (build first)" >&2; exit 1; }
done
[ "$board" = 0 ] || [ -f "$fw" ] || { echo "uart_noise: $fw is missing" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/uart-noise.XXXXXX")
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

/usr/bin/python3 -c "
import numpy as np
np.random.seed(7)
np.save('$work/in.npy', np.random.randn(1, 1, 49, 10).astype(np.float32))"
if [ "$board" = 0 ]; then
    "$tether" compile "$here/examples/kws/kws.json" -o "$work/kws" --quiet
    what=$work/kws
else
    what=$here/examples/kws/kws.json
fi

# one level: FLIP DROP LABEL; sets the globals below and prints a line
base_median=
level() {
    local flip=$1 drop=$2 label=$3
    "$relay" --flip "$flip" --drop "$drop" --seed 1 --baud "$baud" >"$work/paths" 2>"$work/relay.log" &
    local rp=$!
    pids+=("$rp")
    for _ in $(seq 100); do [ -s "$work/paths" ] && break; sleep 0.05; done
    read -r dev host <"$work/paths"
    local dp
    if [ "$board" = 0 ]; then
        "$tetherd" --uart "$dev" --upload-cache "$([ $cache = on ] && echo "$work/cache" || echo off)" \
            --quiet 2>"$work/device.log" &
        dp=$!
    else
        qemu-system-arm -M mps2-an385 -nographic -monitor none -serial "$dev" -icount shift=0 \
            -kernel "$fw" </dev/null >"$work/device.log" 2>&1 &
        dp=$!
    fi
    pids+=("$dp")
    sleep 0.5
    local ok=0 wrong=0 failed=0 times=()
    for i in $(seq "$runs"); do
        rm -f "$work/y.npy"
        local t0 t1 rc=0
        t0=$(date +%s.%N)
        timeout 30 "$tether" run "$what" --device "uart://$host" --in "$work/in.npy" \
            --out "$work/y.npy" >"$work/run.log" 2>&1 || rc=$?
        t1=$(date +%s.%N)
        times+=("$(echo "$t1 - $t0" | bc)")
        if [ $rc -ne 0 ]; then
            failed=$((failed + 1))
        elif [ ! -f "$work/ref.npy" ]; then
            cp "$work/y.npy" "$work/ref.npy"
            ok=$((ok + 1))
        elif cmp -s "$work/y.npy" "$work/ref.npy"; then
            ok=$((ok + 1))
        else
            wrong=$((wrong + 1))
        fi
    done
    kill "$dp" "$rp" 2>/dev/null || true
    wait "$dp" "$rp" 2>/dev/null || true
    local sorted median slowest bytes
    sorted=$(printf '%s\n' "${times[@]}" | sort -g)
    median=$(echo "$sorted" | sed -n "$(((runs + 1) / 2))p")
    slowest=$(echo "$sorted" | tail -1)
    bytes=$(awk '{s += $3} END {printf "%.0f", s}' <(sed -n 's/.*: \([0-9]*\) bytes.*/x x \1/p' "$work/relay.log"))
    [ -n "$base_median" ] || base_median=$median
    printf '%-26s %3d ok %3d wrong %3d failed of %d   median %6.2f s (%5.1fx)  slowest %6.2f s  %7.0f B/run\n' \
        "$label" "$ok" "$wrong" "$failed" "$runs" "$median" "$(echo "$median / $base_median" | bc -l)" \
        "$slowest" "$(echo "$bytes / $runs" | bc -l)"
}

echo "device: $([ "$board" = 0 ] && echo "tetherd --uart (upload cache $cache)" || echo "firmware on QEMU mps2-an385"), line: $([ "$baud" = 0 ] && echo "unpaced ptys" || echo "$baud baud"), $runs runs per level, 30 s each at most"
level 0 0 "clean"
level 0.001 0.0001 "0.1% flipped, 0.01% dropped"
level 0.01 0 "1% flipped"
