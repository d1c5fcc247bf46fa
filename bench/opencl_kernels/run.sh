#!/usr/bin/env bash
# The OpenCL kernels' shape on any OpenCL device, PoCL included (README.md here; scripts/bench
# opencl_kernels; issue 31: a bench that shows a regression without a GPU). Per model of the zoo
# (bench/models, written as ONNX by bench_models), examples/kws and a dense layer of 4 outputs x
# 4000 inputs: compiled for the device (`tether compile --backend opencl --device`, so sized by
# its limits) twice, with the GPU kernels and with the legacy ones (TETHER_OPENCL_LEGACY=1, the
# baseline), and benched in the same run (`tether bench --json`, the two builds of a model one
# after the other). Prints per kernel: the node's operator, global and local work size, the
# work-items, the longest serial loop of one work-item (metadata.json's `serial`: the emitter's
# figure, independent of the device's speed), whether it stays under the device's lanes (with
# the reason, metadata.json's `underfill`) and its profiled median; per build a totals line
# (kernels, work-items, the longest and the summed serial loops, kernels under the lanes, the
# kernels' time and the wall clock on the device); per model the legacy/GPU ratios, and their
# geometric means at the end. Writes OUT/summary.json.
# usage: bench/opencl_kernels/run.sh BUILD_DIR [OUT_DIR] [MODEL...]
#   MODEL: names of the zoo (kws micro_speech ... dense_4x4000); default all
#   TETHER_OCLK_REPEAT / TETHER_OCLK_NUMBER: bench's --repeat / --number (default 3 / 2)
#   TETHER_OCLK_KERNELS=0: the totals only, no line per kernel
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-build}" && pwd)
out=${2:-$build/bench/opencl_kernels}
shift $(($# > 2 ? 2 : $#))
T=$build/host/cli/tether
repeat=${TETHER_OCLK_REPEAT:-3}
number=${TETHER_OCLK_NUMBER:-2}
mkdir -p "$out"
out=$(cd "$out" && pwd)
if [ ! -f "$out/zoo/dense_4x4000.npy" ]; then # the zoo, KWS and the dense layer, with inputs
    TETHER_BUILD_DIR=$build "$here/bench/gpu.sh" --prepare "$out" >/dev/null
fi
export PATH="$build/device/tetherd:$PATH" # local: spawns this tree's tetherd
if ! "$T" info --device local: 2>/dev/null | grep -q "opencl.*yes"; then
    echo "bench/opencl_kernels: the local tetherd has no OpenCL device (install PoCL:" \
        "scripts/setup); skipped"
    exit 0
fi
models=("$@")
if [ ${#models[@]} -eq 0 ]; then
    models=(dense_4x4000 kws micro_speech ds_cnn_s mobilenet_v1_025 mobilenet_v2_035 unet_small
        attention_block)
fi
status=0
for n in "${models[@]}"; do
    f=$out/zoo/$n.onnx
    [ -f "$f" ] || f=$out/zoo/$n.json
    if [ ! -f "$f" ]; then
        echo "bench/opencl_kernels: no model '$n' in $out/zoo" >&2
        status=2
        continue
    fi
    for v in gpu legacy; do
        leg=0
        [ $v = gpu ] || leg=1
        rm -rf "$out/$v/$n"
        mkdir -p "$out/$v"
        if ! TETHER_OPENCL_LEGACY=$leg "$T" compile "$f" -o "$out/$v/$n" --backend opencl \
            --device local: >"$out/$v/$n.compile.txt" 2>&1; then
            echo "bench/opencl_kernels: $n ($v): compile failed:" >&2
            tail -5 "$out/$v/$n.compile.txt" >&2
            status=1
            continue
        fi
        # the first run builds every kernel on the device (PoCL: seconds each on a loaded machine)
        if ! "$T" bench "$out/$v/$n" --device local: --timeout-ms 600000 --in "$out/zoo/$n.npy" \
            --repeat "$repeat" --number "$number" --json "$out/$v/$n.bench.json" \
            >"$out/$v/$n.bench.txt" 2>&1; then
            echo "bench/opencl_kernels: $n ($v): bench failed:" >&2
            tail -5 "$out/$v/$n.bench.txt" >&2
            status=1
        fi
    done
done
python3 - "$out" "${TETHER_OCLK_KERNELS:-1}" "${models[@]}" <<'PY'
import json, math, os, sys
out, per_kernel, models = sys.argv[1], sys.argv[2] != "0", sys.argv[3:]

def load(v, n):
    try:
        meta = json.load(open(os.path.join(out, v, n, "metadata.json")))
        bench = json.load(open(os.path.join(out, v, n + ".bench.json")))
    except (OSError, ValueError):
        return None
    steps, times = meta["steps"], bench.get("kernels", [])
    if len(times) != len(steps):
        return None
    rows = []
    for s, t in zip(steps, times):
        g = s["global"]
        rows.append({
            "kernel": s["kernel"], "op": s["op"], "global": g,
            "local": s.get("local"), "work_items": s.get("work_items", math.prod(g)),
            "serial": s.get("serial", 1), "underfill": s.get("underfill"),
            "median_us": t["median_us"]})
    tot = {
        "kernels": len(rows),
        "work_items": sum(r["work_items"] for r in rows),
        "max_serial": max((r["serial"] for r in rows), default=0),
        "sum_serial": sum(r["serial"] for r in rows),
        "under_lanes": sum(1 for r in rows if r["underfill"]),
        "kernel_sum_us": bench["median_us"],
        "wall_us": bench.get("wall_us"),
        "launch_overhead_us": bench.get("launch_overhead_us"),
        "device_lanes": meta.get("device_lanes")}
    return {"kernels": rows, "totals": tot}

def size(v):
    return "x".join(str(d) for d in v) if v else "-"

summary, ratios = {}, {"max_serial": [], "sum_serial": [], "kernel_sum_us": []}
for n in models:
    res = {v: load(v, n) for v in ("legacy", "gpu")}
    summary[n] = res
    print(f"\n== {n}")
    for v in ("legacy", "gpu"):
        r = res[v]
        if not r:
            print(f"  {v}: no result (see {out}/{v}/{n}.*.txt)")
            continue
        if per_kernel:
            print(f"  {v} kernels (device lanes {r['totals']['device_lanes']}):")
            print(f"    {'kernel':34} {'op':16} {'global':>9} {'local':>6} {'work-items':>10} "
                  f"{'serial':>7} {'us':>10}  under the lanes because")
            for k in r["kernels"]:
                print(f"    {k['kernel'][:34]:34} {k['op'][:16]:16} {size(k['global']):>9} "
                      f"{size(k['local']):>6} {k['work_items']:>10} {k['serial']:>7} "
                      f"{k['median_us']:>10.2f}  {k['underfill'] or ''}")
        t = r["totals"]
        wall = "-" if t["wall_us"] is None else f"{t['wall_us']:.1f}"
        print(f"  {v:6} total: {t['kernels']} kernels, {t['work_items']} work-items, longest "
              f"serial loop {t['max_serial']}, serial loops summed {t['sum_serial']}, "
              f"{t['under_lanes']} under the lanes; kernels {t['kernel_sum_us']:.1f} us, "
              f"wall {wall} us")
    if res["legacy"] and res["gpu"]:
        a, b = res["legacy"]["totals"], res["gpu"]["totals"]
        line = []
        for k, label in (("max_serial", "longest serial"), ("sum_serial", "summed serial"),
                         ("kernel_sum_us", "kernel time")):
            if a[k] > 0 and b[k] > 0:
                ratios[k].append(a[k] / b[k])
                line.append(f"{label} {a[k] / b[k]:.2f}x")
        print("  legacy/gpu: " + ", ".join(line))

def gmean(v):
    return math.exp(sum(math.log(x) for x in v) / len(v)) if v else float("nan")

print(f"\ngeometric mean of legacy/gpu over {len(ratios['kernel_sum_us'])} models: longest serial "
      f"loop {gmean(ratios['max_serial']):.2f}x, summed serial loops "
      f"{gmean(ratios['sum_serial']):.2f}x, kernel time on this device "
      f"{gmean(ratios['kernel_sum_us']):.2f}x (above 1: the GPU kernels do better)")
json.dump({"models": summary,
           "geomean_legacy_over_gpu": {k: gmean(v) for k, v in ratios.items()}},
          open(os.path.join(out, "summary.json"), "w"), indent=1)
print(f"wrote {out}/summary.json")
PY
exit $status
