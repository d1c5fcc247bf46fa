#!/usr/bin/env bash
# scripts/bench boards: the board x model matrix (docs/boards.md, "Measured"). For every board of
# device/mcu/boards/boards.txt whose firmware is built, QEMU is started with -icount shift=0
# (scripts/qemu-board --icount --board NAME) and every model of the zoo (examples/kws and the
# ONNX files of bench/models, written by bench_models; ds_cnn_int8 and its float twin ds_cnn_f32,
# written by gen_ds_cnn_int8; tests/mcu/models/tiny_mlp.json, which
# fits the micro:bit) goes through `tether ab`: both ABIs
# compiled for the board's core from HELLO, linked, uploaded, run and compared with the
# interpreter. A model over the board's load region by less than 256 KiB runs again with
# --params blob --params-pool psram --pool psram (weights uploaded as a blob, tensors in the
# board's PSRAM); one that still does not fit is listed with the reason (how far over). Prints one Markdown table: cycles of one call (exact under -icount where a
# SysTick tick is a whole number of ns), code bytes, image bytes (RAM load region), .bss
# (workspace), static stack bound and measured stack high-water mark, per ABI.
# usage: bench/boards/run.sh BUILD_DIR [BOARD...]   (TETHER_BENCH_MODELS="kws ds_cnn_s" picks
# models; TETHER_BENCH_TARGETS="mps3-an547=cortex-m55-nomve" adds builds for another target;
# TETHER_BENCH_TIMEOUT bounds each `tether ab`, default 300 s)
# What must stay true: every QEMU started here is stopped (trap); nothing here is a test.
set -euo pipefail
dir=$1
shift
here=$(cd "$(dirname "$0")/../.." && pwd)
table=$here/device/mcu/boards/boards.txt
tether=$dir/host/cli/tether
boards=("$@")
[ ${#boards[@]} -gt 0 ] || mapfile -t boards < <(awk '/^[a-z0-9]/ { print $1 }' "$table")
models=${TETHER_BENCH_MODELS:-"tiny_mlp kws micro_speech ds_cnn_s ds_cnn_int8 ds_cnn_f32 mobilenet_v1_025 mobilenet_v2_035 unet_small attention_block"}
zoo=$dir/bench/models/out
limit=${TETHER_BENCH_TIMEOUT:-300} # seconds per `tether ab`
if [ ! -f "$zoo/ds_cnn_s.onnx" ]; then
    "$dir/bench/models/bench_models" >/dev/null # writes the zoo's ONNX files
fi
if [ ! -f "$zoo/ds_cnn_int8.onnx" ]; then # the int8 DS-CNN and its float twin (same weights)
    mkdir -p "$zoo"
    "$dir/bench/models/gen_ds_cnn_int8" "$zoo/ds_cnn_int8.onnx" "$zoo/ds_cnn_f32.onnx"
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/bench-boards.XXXXXX")
qpid=
cleanup() {
    if [ -n "$qpid" ]; then
        kill -TERM "$qpid" 2>/dev/null || true
        wait "$qpid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# starts board $1 under QEMU (-icount) into qpid/url; stops the one before
start_board() {
    if [ -n "$qpid" ]; then
        kill -TERM "$qpid" 2>/dev/null || true
        wait "$qpid" 2>/dev/null || true
    fi
    rm -f "$work/url"
    "$here/scripts/qemu-board" --icount --board "$1" >"$work/url" 2>"$work/qemu.err" &
    qpid=$!
    for _ in $(seq 100); do
        [ -s "$work/url" ] && break
        sleep 0.1
    done
    url=$(head -n 1 "$work/url")
}

model_file() {
    case $1 in
    kws) echo "$here/examples/kws/kws.json" ;;
    tiny_mlp) echo "$here/tests/mcu/models/tiny_mlp.json" ;; # a 16-8-4 MLP (fits the micro:bit)
    *) echo "$zoo/$1.onnx" ;;
    esac
}

echo "| board | core | target | model | weights | ABI | cycles | code | text+data | .bss | static stack | stack HWM |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
for b in "${boards[@]}"; do
    fw=$dir/device/mcu/$b/tether-fw.elf
    if [ ! -f "$fw" ]; then
        echo "bench boards: $b: no firmware at $fw (its cross compiler is not installed?)" >&2
        continue
    fi
    core=$(awk -v b="$b" '$1 == b { print $5 }' "$table")
    clock=$(awk -v b="$b" '$1 == b { print $10 }' "$table")
    start_board "$b"
    targets=$core
    for extra in ${TETHER_BENCH_TARGETS:-}; do
        [ "${extra%%=*}" = "$b" ] && targets="$targets ${extra#*=}"
    done
    for t in $targets; do
        for m in $models; do
            f=$(model_file "$m")
            [ -f "$f" ] || continue
            # linked into the image first; a model over the load region by less than 256 KiB
            # runs again with its weights as a blob and every tensor in the board's psram pool
            placement=linked
            opts=()
            rm -f "$work/ab.json"
            ok=
            if timeout "$limit" "$tether" ab "$f" --device "$url" --target "$t" --repeat 3 --min-repeat-ms 5 \
                --json "$work/ab.json" >"$work/ab.out" 2>&1; then
                ok=1
            else
                over=$(sed -n 's/.*: \([0-9]*\) bytes too large.*/\1/p' "$work/ab.out" | head -n 1)
                if [ -n "$over" ] && [ "$over" -lt 262144 ] && grep -q "psram" <<<"$("$tether" info --device "$url" 2>/dev/null)"; then
                    placement="blob, psram"
                    opts=(--params blob --params-pool psram --pool psram)
                    cp "$work/ab.out" "$work/ab.first"
                    if timeout "$limit" "$tether" ab "$f" --device "$url" --target "$t" --repeat 3 --min-repeat-ms 5 \
                        "${opts[@]}" --json "$work/ab.json" >"$work/ab.out" 2>&1; then
                        ok=1
                    fi
                fi
            fi
            if [ -n "$ok" ]; then
                python3 - "$work/ab.json" "$b" "$core" "$t" "$m" "$clock" "$placement" <<'PY'
import json, sys
path, board, core, target, model, clock, placement = sys.argv[1:]
j = json.load(open(path))
for a in j["abis"]:
    cyc = round(a["first_call_us"] * int(clock) / 1e6)
    image = a["text"] + a["data"]
    print(f"| {board} | {core} | {target} | {model} | {placement} | {a['abi']} | {cyc} | "
          f"{a['code']} | {image} | {a['bss']} | {a.get('static_stack') or 'unbounded'} | "
          f"{a['stack_hwm']} |")
PY
            else
                why=$(grep -m1 -E "does not fit|failed|error|cannot" "$work/ab.out" |
                    sed 's/|/\\|/g; s/^tether ab: //; s/; use --pool .*//' | cut -c1-220)
                if [ -z "$why" ]; then
                    why="no result within ${limit} s (TETHER_BENCH_TIMEOUT)"
                    start_board "$b" # it may still be running the call
                fi
                echo "| $b | $core | $t | $m | - | - | does not run: $why | | | | | |"
            fi
        done
    done
    kill -TERM "$qpid" 2>/dev/null || true
    wait "$qpid" 2>/dev/null || true
    qpid=
done
