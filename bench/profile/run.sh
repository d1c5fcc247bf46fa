#!/usr/bin/env bash
# The instrumentation overhead of profiling builds (docs/profile.md) on the model zoo of
# bench/models: each model's plain artifact and profiling build timed interleaved by `tether
# profile` (TIME medians), on a tetherd on 127.0.0.1 and, when QEMU and the firmware are built,
# on the QEMU Cortex-M3 board (-icount) for the models that fit its load region. Prints one line
# per model and device: plain, profiling build (TIME medians), overhead, the profiled CALL's own
# time (on a board with the per-node stack measurements) and the node times' share of it.
# usage: bench/profile/run.sh BUILD_DIR   (scripts/bench profile)
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
T=$build/host/cli/tether
out=$build/bench/models/out
work=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
if [ ! -f "$out/kws.onnx" ]; then # the zoo as ONNX files (bench_models writes them)
    (cd "$work" && "$build/bench/models/bench_models" >/dev/null)
fi
models=(kws micro_speech ds_cnn_s mobilenet_v1_025 mobilenet_v2_035 unet_small attention_block)
report() { # device model json
    python3 - "$@" <<'PY'
import json, sys
dev, model, path = sys.argv[1:4]
j = json.load(open(path))
print(f"{dev:8} {model:18} {len(j['nodes']):5d} {j['plain_ns'] / 1e3:12.1f} "
      f"{j['profiled_ns'] / 1e3:12.1f} {100 * j['overhead']:+9.2f}% "
      f"{j['call_ns'] / 1e3:12.1f} {100 * j['sum_ns'] / j['call_ns']:9.1f}%")
PY
}
printf "%-8s %-18s %5s %12s %12s %10s %12s %10s\n" device model nodes "plain us" "profiled us" \
    overhead "call us" "nodes/call"
"$build/device/tetherd/tetherd" --tcp 127.0.0.1:0 --port-file "$work/port" --quiet &
pids+=($!)
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.05; done
url=tcp://127.0.0.1:$(cat "$work/port")
for m in "${models[@]}"; do
    "$T" profile "$out/$m.onnx" --device "$url" --runs 20 --json "$work/$m.json" >/dev/null
    report tetherd "$m" "$work/$m.json"
done
fw=$build/device/mcu/mps2-an385/tether-fw.elf
if command -v qemu-system-arm >/dev/null && [ -f "$fw" ]; then
    for m in kws micro_speech ds_cnn_s; do
        "$(dirname "$0")/../../scripts/qemu-board" --icount "$fw" >"$work/qemu.url" &
        q=$!
        pids+=($q)
        for _ in $(seq 100); do [ -s "$work/qemu.url" ] && break; sleep 0.05; done
        params=()
        [ "$m" = ds_cnn_s ] && params=(--params blob) # its weights would not fit the load region
        if "$T" profile "$out/$m.onnx" --device "$(head -1 "$work/qemu.url")" --runs 3 \
            "${params[@]}" --json "$work/$m-board.json" >"$work/$m-board.txt" 2>&1; then
            report board "$m" "$work/$m-board.json"
        else
            echo "board    $m: $(grep 'tether profile:' "$work/$m-board.txt" | tail -1)"
        fi
        kill "$q" 2>/dev/null || true
        wait "$q" 2>/dev/null || true
        : >"$work/qemu.url"
    done
fi
