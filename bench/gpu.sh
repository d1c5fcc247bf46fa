#!/usr/bin/env bash
# bench/gpu.sh: the OpenCL backend on a GPU (docs/codegen.md "GPU kernels"; issue: OpenCL on real
# GPUs). Never part of the tests.
#
#   bench/gpu.sh --prepare DIR   here (where the tree is built): the models into DIR/zoo: the
#                                zoo of bench/models (ONNX, written by bench_models with
#                                TETHER_ZOO_ONNX_ONLY=1), examples/kws and a dense layer of 4
#                                outputs x 4000 inputs, each with an input NAME.npy
#   bench/gpu.sh OUT [ZOO_DIR]   on the machine with tetherd and the OpenCL device ($TD, default
#                                local:; `tether` on PATH): per model, `tether bench --backend
#                                opencl` with the legacy kernels (TETHER_OPENCL_LEGACY=1, the
#                                baseline) and the GPU kernels, interleaved; prints the sum of the
#                                kernels' times, the wall-clock latency on the device and the
#                                launch overhead, and the ratios; writes OUT/summary.json,
#                                OUT/summary.md and each run's JSON (OUT/runs/).
#   bench/gpu.sh OUT ZOO_DIR fp16  the same machine: per model, the GPU kernels in fp32 and with
#                                --precision fp16, interleaved, then `tether ab --opencl
#                                --precision fp32,fp16` for the outputs' difference; prints the
#                                fp32/fp16 kernel-time and wall-clock speedups and the top-1
#                                agreement (OUT/fp16.md, OUT/fp16.json).
# TETHER_GPU_REPEAT (default 7) and TETHER_GPU_NUMBER (default 50) set bench's --repeat/--number
# (tiny values test the script on PoCL).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
if [ "${1:-}" = --prepare ]; then
    d=${2:?usage: bench/gpu.sh --prepare DIR}
    b=${TETHER_BUILD_DIR:-$here/build}
    mkdir -p "$d/zoo"
    cmake --build "$b" --target bench_models >/dev/null
    TETHER_ZOO_ONNX_ONLY=1 "$b/bench/models/bench_models" >"$d/zoo/shapes.txt"
    cp "$b/bench/models/out/"*.onnx "$d/zoo/"
    cp "$here/examples/kws/kws.json" "$here/examples/kws/kws.bin" "$d/zoo/"
    cp "$here/examples/kws/input_0.npy" "$d/zoo/kws.npy"
    python3 - "$d/zoo" <<'PY'
import json, os, re, struct, sys
d = sys.argv[1]
def npy(path, shape, vals):
    hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % (
        ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else ""))
    hdr += " " * (63 - (10 + len(hdr)) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode())
        f.write(struct.pack("<%df" % len(vals), *vals))
seed = 12345
def rnd(n):
    global seed
    out = []
    for _ in range(n):
        seed = (seed * 1103515245 + 12345) & 0x7FFFFFFF
        out.append(seed / 0x7FFFFFFF * 2 - 1)
    return out
for line in open(os.path.join(d, "shapes.txt")):
    w = line.split()
    if len(w) >= 2 and re.fullmatch(r"[a-z0-9_]+", w[0]) and all(re.fullmatch(r"\d+", x) for x in w[1:]) \
            and os.path.exists(os.path.join(d, w[0] + ".onnx")):
        shape = [int(x) for x in w[1:]]
        n = 1
        for s in shape:
            n *= s
        npy(os.path.join(d, w[0] + ".npy"), shape, rnd(n))
# dense 4 x 4000: x [1,4000] -> dense(W [4,4000] transposed, b [4])
w, b = rnd(16000), rnd(4)
with open(os.path.join(d, "dense_4x4000.bin"), "wb") as f:
    f.write(struct.pack("<16000f", *[v * 0.02 for v in w]) + struct.pack("<4f", *b))
m = {"format": "tether-model", "version": 1, "name": "dense_4x4000", "weights": "dense_4x4000.bin",
     "tensors": [{"name": "x", "dtype": "float32", "shape": [1, 4000]},
                 {"name": "w", "dtype": "float32", "shape": [4, 4000], "offset": 0, "length": 64000},
                 {"name": "b", "dtype": "float32", "shape": [4], "offset": 64000, "length": 16},
                 {"name": "y", "dtype": "float32", "shape": [1, 4]}],
     "inputs": ["x"], "outputs": ["y"],
     "nodes": [{"name": "fc", "op": "dense", "inputs": ["x", "w", "b"], "outputs": ["y"],
                "attrs": {"trans_b": True}}]}
json.dump(m, open(os.path.join(d, "dense_4x4000.json"), "w"), indent=1)
npy(os.path.join(d, "dense_4x4000.npy"), [1, 4000], rnd(4000))
PY
    ls "$d/zoo"
    exit 0
fi
out=${1:?usage: bench/gpu.sh OUT [ZOO_DIR] | --prepare DIR}
zoo=${2:-$here/.gpu/zoo}
dev=${TD:-local:}
rep=${TETHER_GPU_REPEAT:-7}
num=${TETHER_GPU_NUMBER:-50}
mode=${3:-legacy}
mkdir -p "$out/runs"
models=()
for f in "$zoo"/*.json "$zoo"/*.onnx; do
    [ -e "$f" ] || continue
    n=$(basename "${f%.*}")
    case " ${names:-} " in *" $n "*) continue ;; esac # kws.json before the zoo's kws.onnx
    [ -e "$zoo/$n.npy" ] && models+=("$f") && names="${names:-} $n"
done
[ ${#models[@]} -gt 0 ] || { echo "bench/gpu.sh: no models with inputs in $zoo (run --prepare)" >&2; exit 2; }
tether info --device "$dev" >"$out/info.txt" 2>&1 || true
if [ "$mode" = fp16 ]; then
    for f in "${models[@]}"; do
        n=$(basename "${f%.*}")
        for r in 1 2; do # interleaved: fp32 fp16, fp32 fp16
            for p in fp32 fp16; do
                timeout 120 tether bench "$f" --in "$zoo/$n.npy" --backend opencl --precision $p \
                    --device "$dev" --repeat "$rep" --number "$num" \
                    --json "$out/runs/$n.gpu.$p.$r.json" >"$out/runs/$n.gpu.$p.$r.txt" 2>&1 ||
                    echo "$n ($p): bench failed: $(tail -2 "$out/runs/$n.gpu.$p.$r.txt")" >&2
            done
        done
        timeout 300 tether ab "$f" --in "$zoo/$n.npy" --opencl --precision fp32,fp16 --device "$dev" \
            --repeat 5 >"$out/runs/$n.ab.txt" 2>&1 || true
    done
    python3 - "$out" "${models[@]}" <<'PY'
import json, math, os, re, sys
out = sys.argv[1]
rows = []
def best(n, p, key):
    v = []
    for r in (1, 2):
        try:
            j = json.load(open(os.path.join(out, "runs", "%s.gpu.%s.%d.json" % (n, p, r))))
            if j.get(key) is not None:
                v.append(j[key])
        except (OSError, ValueError):
            pass
    return min(v) if v else None
for f in sys.argv[2:]:
    n = os.path.splitext(os.path.basename(f))[0]
    r = {"model": n}
    for p in ("fp32", "fp16"):
        r[p] = {"kernel_sum_us": best(n, p, "median_us"), "wall_us": best(n, p, "wall_us")}
    try:
        ab = open(os.path.join(out, "runs", n + ".ab.txt")).read()
        m = re.findall(r"max \|fp16 - fp32\| (\S+), max relative (\S+), top-1 agreement (\d+)/(\d+)", ab)
        if m:
            r["max_abs"] = max(float(x[0]) for x in m)
            r["max_rel"] = max(float(x[1]) for x in m)
            r["top1"] = "%d/%d" % (sum(int(x[2]) for x in m), sum(int(x[3]) for x in m))
    except OSError:
        pass
    a, b = r["fp32"]["kernel_sum_us"], r["fp16"]["kernel_sum_us"]
    if a and b:
        r["kernel_speedup"] = a / b
    a, b = r["fp32"]["wall_us"], r["fp16"]["wall_us"]
    if a and b:
        r["wall_speedup"] = a / b
    rows.append(r)
def f(v):
    return "-" if v is None else "%.2f" % v
lines = ["| model | fp32 kernels us | fp16 kernels us | speedup | fp32 wall us | fp16 wall us | "
         "wall speedup | max abs diff | max rel diff | top-1 agree |", "|---|---|---|---|---|---|---|---|---|---|"]
for r in rows:
    lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
        r["model"], f(r["fp32"]["kernel_sum_us"]), f(r["fp16"]["kernel_sum_us"]), f(r.get("kernel_speedup")),
        f(r["fp32"]["wall_us"]), f(r["fp16"]["wall_us"]), f(r.get("wall_speedup")),
        "%.3g" % r["max_abs"] if "max_abs" in r else "-", "%.3g" % r["max_rel"] if "max_rel" in r else "-",
        r.get("top1", "-")))
sp = [r["kernel_speedup"] for r in rows if r.get("kernel_speedup")]
if sp:
    lines.append("")
    lines.append("geometric mean of fp32/fp16 kernel time over %d models: %.2f" % (
        len(sp), math.exp(sum(math.log(x) for x in sp) / len(sp))))
txt = "\n".join(lines)
print(txt)
open(os.path.join(out, "fp16.md"), "w").write(txt + "\n")
json.dump(rows, open(os.path.join(out, "fp16.json"), "w"), indent=1)
PY
    exit 0
fi
for f in "${models[@]}"; do
    n=$(basename "${f%.*}")
    for k in legacy gpu; do
        leg=0
        [ $k = legacy ] && leg=1
        if ! TETHER_OPENCL_LEGACY=$leg timeout 60 tether bench "$f" --in "$zoo/$n.npy" --backend opencl \
            --device "$dev" --repeat "$rep" --number "$num" --json "$out/runs/$n.$k.fp32.json" \
            >"$out/runs/$n.$k.fp32.txt" 2>&1; then
            echo "$n ($k): bench failed: $(tail -2 "$out/runs/$n.$k.fp32.txt")" >&2
        fi
    done
done
python3 - "$out" "${models[@]}" <<'PY'
import json, math, os, sys
out = sys.argv[1]
rows = []
for f in sys.argv[2:]:
    n = os.path.splitext(os.path.basename(f))[0]
    r = {"model": n}
    for k in ("legacy", "gpu"):
        p = os.path.join(out, "runs", "%s.%s.fp32.json" % (n, k))
        try:
            j = json.load(open(p))
            r[k] = {"kernel_sum_us": j.get("median_us"), "wall_us": j.get("wall_us"),
                    "launch_overhead_us": j.get("launch_overhead_us"),
                    "kernels": [(x.get("kernel"), x.get("median_us")) for x in j.get("kernels", [])]}
        except (OSError, ValueError):
            r[k] = None
    if r["legacy"] and r["gpu"] and r["gpu"]["kernel_sum_us"]:
        r["kernel_speedup"] = r["legacy"]["kernel_sum_us"] / r["gpu"]["kernel_sum_us"]
        if r["legacy"]["wall_us"] and r["gpu"]["wall_us"]:
            r["wall_speedup"] = r["legacy"]["wall_us"] / r["gpu"]["wall_us"]
    rows.append(r)
def f(v):
    return "-" if v is None else "%.2f" % v
lines = ["| model | legacy kernels us | GPU kernels us | speedup | legacy wall us | GPU wall us | "
         "wall speedup | GPU launch overhead us |", "|---|---|---|---|---|---|---|---|"]
for r in rows:
    L, G = r["legacy"] or {}, r["gpu"] or {}
    lines.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
        r["model"], f(L.get("kernel_sum_us")), f(G.get("kernel_sum_us")), f(r.get("kernel_speedup")),
        f(L.get("wall_us")), f(G.get("wall_us")), f(r.get("wall_speedup")),
        f(G.get("launch_overhead_us"))))
sp = [r["kernel_speedup"] for r in rows if r.get("kernel_speedup")]
if sp:
    lines.append("")
    lines.append("geometric mean of legacy/GPU kernel time over %d models: %.2f" % (
        len(sp), math.exp(sum(math.log(x) for x in sp) / len(sp))))
lines.append("fp16: bench/gpu.sh OUT ZOO_DIR fp16")
txt = "\n".join(lines)
print(txt)
open(os.path.join(out, "summary.md"), "w").write(txt + "\n")
json.dump(rows, open(os.path.join(out, "summary.json"), "w"), indent=1)
PY
