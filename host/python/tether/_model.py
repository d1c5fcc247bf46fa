"""Models: compile, the reference interpreter, run a model on a device, and the A/B of variants.

What must stay true: a model is compiled for the device's own target and CPU unless the caller
says otherwise (by the host library, tether_compile_for_device; on an MCU board its artifact is
linked against the board's firmware when prepared), with the compiler's default ABI (unpacked, the CLI's) unless abi= says otherwise;
temporary directories are removed on every path (also on errors and KeyboardInterrupt) and no
path into one is returned (compiled "dir"/"library_path" are None then); every artifact
prepared here is closed before returning. Inputs follow one rule (_dtypes.split_inputs): plain
Python data (x.tolist()) is one array, converted to the dtype the compiled model declares;
several inputs are a tuple, a list of arrays or a dict. The A/B follows
`tether ab` (docs/cli.md, "How ab measures"): all variants prepared first, one warm-up TIME each
that sets the calls per repeat, then `repeat` rounds of one TIME per variant with the order
reversed every other round (on an MCU board, which holds one module at a time, each variant is
prepared, measured and released in turn); the ratio is the Hodges-Lehmann estimate of the host library.
ONNX inputs an operator needs as constants (a Reshape's shape) are bound at compile time from
the values given and are not fed at run time.
"""

import dataclasses
import json
import os
import re
import shutil
import tempfile
from typing import Dict, List, NamedTuple, Optional

import numpy as np

from . import _tether
from ._artifact import Artifact, Outputs
from ._dtypes import (bind_inputs, default_tolerance, from_numpy, generate, is_array_like, native,
                      plain_array, split_inputs, to_numpy)
from ._session import CallResult, _error

_COMPILE_KEYS = ("abi", "target", "cpu", "prefix", "opt_level", "params", "backend",
                 "texture_weights", "input_shapes", "tuning_log", "loop_max")


def _need_compiler():
    if not _tether.HAVE_COMPILER:
        raise _error("this tether build has no compiler (tether_compiler)")


def targets():
    """The compiler's target profiles: dicts with name, kind (shared/static), description and
    whether the target's compiler is installed (available)."""
    _need_compiler()
    return _tether.targets()


def load_array(path):
    """Reads a .npy file (or an ONNX TensorProto .pb file) into an ndarray, as the CLI's --in."""
    dtype, shape, data = _tether.read_array(os.fspath(path))
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise _error(f"{path}: dtype {dtype} has no numpy equivalent") from None
    return np.frombuffer(data, dtype=dt).reshape(shape).copy()


def _opt_level(level):
    if level is None:
        return _tether.OPT_DEFAULT
    if level == "s":
        return -1
    if isinstance(level, (int, np.integer)) and 0 <= int(level) <= 3:
        return int(level)
    raise ValueError(f"opt_level must be 0, 1, 2, 3 or 's', not {level!r}")


def _shape_specs(input_shapes):
    if input_shapes is None:
        return None
    if isinstance(input_shapes, dict):
        return [f"{k}=" + "x".join(str(int(d)) for d in v) for k, v in input_shapes.items()]
    return [str(s) for s in input_shapes]


def _values(inputs):
    """The given inputs (split_inputs' rule) as (names or None, arrays, given): arrays are the
    values the compiler sees (ndarray or None each; plain data in numpy's own dtype, which the
    front end converts where it binds a constant), given the values as the user gave them (plain
    data is converted to the compiled model's dtype when it is fed)."""
    names, given = split_inputs(inputs)
    arrays = []
    for i, v in enumerate(given):
        if v is None:
            arrays.append(None)
        elif is_array_like(v):
            arrays.append(native(np.asarray(v)))
        else:
            label = f"input '{names[i]}'" if names is not None else f"input {i}"
            arrays.append(native(plain_array(v, label)))
    return names, arrays, given


def _runtime(names, given, bound):
    """What is fed at run time after the compile bound some inputs as constants: a dict by name
    (inputs given by name) or a tuple in order (a tuple is always several inputs)."""
    bound = list(bound or []) + [False] * (len(given) - len(bound or []))
    if names is not None:
        return {n: a for n, a, b in zip(names, given, bound) if not b}
    return tuple(a for a, b in zip(given, bound) if not b)


def _value_specs(arrays):
    out = []
    for a in arrays:
        if a is None:
            out.append(None)
        else:
            out.append((from_numpy(a.dtype), a.shape, a))
    return out


def compile(model, out_dir, *, abi=None, target=None, cpu=None, prefix=None, opt_level=None,
            params="linked", backend="c", texture_weights=False, input_shapes=None, inputs=None,
            tuning_log=None, profile=False, loop_max=0):
    """Compiles MODEL (.json, or .onnx) into the artifact directory out_dir, as `tether compile`.

    abi: packed or unpacked (None: the compiler's default, unpacked, as `tether compile`);
    target: a profile name (tether.targets(), default x86_64-linux); cpu: -march/-mcpu value;
    opt_level: 0..3 or 's' (default: the target's); params: linked or blob; backend: c or opencl
    (texture_weights for OpenCL); input_shapes: {name: shape} or ["NAME=1x3x224x224"] for
    dynamic dimensions; inputs: values the ONNX front end may bind as constants (one or several
    by the rule of docs/python.md); tuning_log: a `tether tune` log; profile: a profiling build
    (`--profile`: node times for Artifact.profile, docs/profile.md); loop_max: the scan-output
    rows of a run-time Loop whose trip count has no bound of its own (`--loop-max N`; 0: none,
    such a Loop is refused naming it).

    Returns a dict: the build's figures (text, data, bss, code, static_stack, params_bytes,
    workspace_bytes, library, entry, ...), bound (per given input: made a constant), dir,
    library_path, library_bytes and report (report.json)."""
    _need_compiler()
    model = os.fspath(model)
    names, arrays, _ = _values(inputs)
    return _compile(model, os.fspath(out_dir), arrays, names, abi=abi, target=target, cpu=cpu,
                    prefix=prefix, opt_level=opt_level, params=params, backend=backend,
                    texture_weights=texture_weights, input_shapes=input_shapes,
                    tuning_log=tuning_log, profile=profile, loop_max=loop_max)


def _compile(model, out_dir, arrays, names=None, *, abi=None, target=None, cpu=None, prefix=None,
             opt_level=None, params="linked", backend="c", texture_weights=False,
             input_shapes=None, tuning_log=None, session=None, profile=False, loop_max=0):
    """compile() with the inputs already resolved (arrays: ndarray or None each; names: their
    input names, or None for the model's input order). With session: compiled for its device by
    the host library (tether_compile_for_device: target and CPU from its HELLO unless given);
    res["target"] and res["cpu"] say what was chosen."""
    if params not in ("linked", "blob"):
        raise ValueError("params must be 'linked' or 'blob'")
    dev = {}
    if session is not None:
        from ._session import _firmware_dirs

        dev = dict(session=session._c, firmware=getattr(session, "firmware", None),
                   firmware_dirs=_firmware_dirs())
    res = _tether.compile(
        model, out_dir, abi=abi, target=target, cpu=cpu, prefix=prefix,
        opt_level=_opt_level(opt_level), link_params=params == "linked", backend=backend,
        texture_weights=bool(texture_weights), input_shapes=_shape_specs(input_shapes),
        input_values=_value_specs(arrays) if arrays else None,
        input_names=names if arrays else None,
        tuning_log=None if tuning_log is None else os.fspath(tuning_log), profile=bool(profile),
        loop_max=int(loop_max), **dev)
    res["dir"] = out_dir
    lib = os.path.join(out_dir, res["library"]) if res["library"] else None
    res["library_path"] = lib
    res["library_bytes"] = os.path.getsize(lib) if lib and os.path.isfile(lib) else None
    try:
        with open(os.path.join(out_dir, "report.json"), encoding="utf-8") as f:
            res["report"] = json.load(f)
    except (OSError, ValueError):
        res["report"] = None
    return res


def reference(model, inputs=None, *, input_shapes=None, loop_max=0):
    """Runs MODEL on the compiler's reference interpreter on this machine (every element type:
    inputs and outputs are numpy arrays of the model's dtypes): the ground truth device runs are
    compared with; loop_max as compile's. Returns Outputs (name -> ndarray)."""
    _need_compiler()
    model = os.fspath(model)
    names, arrays, given = _values(inputs)
    specs = _value_specs(arrays) if arrays else None
    shapes = _shape_specs(input_shapes)
    sig = _tether.model_signature(model, input_shapes=shapes, input_values=specs,
                                  input_names=names if arrays else None, loop_max=int(loop_max))
    from ._artifact import IOSpec

    ins = [IOSpec(n, tuple(s), to_numpy(d)) for n, d, s in sig["inputs"]]
    checked = bind_inputs(ins, _runtime(names, given, sig["bound"]), "model")
    outs = _tether.interpret(model, checked, input_shapes=shapes, input_values=specs,
                             input_names=names if arrays else None, loop_max=int(loop_max))
    res = []
    for n, d, s, b in outs:
        dt = to_numpy(d)
        if not isinstance(dt, np.dtype):
            raise ValueError(f"output '{n}': dtype {d} has no numpy equivalent (install ml_dtypes "
                             "for bfloat16)")
        res.append((n, np.frombuffer(b, dtype=dt).reshape(s).copy()))
    return Outputs(res)


def device_target(info):
    """The compile target and CPU for a device from its HELLO (a session's info): an MCU
    board's core, else <arch>-linux with the device's -march value."""
    _need_compiler()
    names = {t["name"] for t in _tether.targets()}
    if info.get("load_size_bytes"):
        target, cpu = info["arch"], None
        if target not in names:
            raise _error(f"the device is a {info.get('board')} board with CPU '{target}', for "
                         "which the compiler has no target (give target=)")
    else:
        target, cpu = f"{info['arch']}-linux", info.get("cpu") or None
        if target not in names:
            raise _error(f"the device is a {info['arch']} machine ({info['triple']}), for which "
                         "the compiler has no target (give target=)")
    return target, cpu


def _compile_options(session, options):
    """The compile options of run_model/ab; what they leave open (target, cpu) the host library
    takes from the session's device when compiling (_compile(..., session=))."""
    unknown = [k for k in options if k not in _COMPILE_KEYS]
    if unknown:
        raise TypeError(f"unknown option '{unknown[0]}' (one of: {', '.join(_COMPILE_KEYS)})")
    return dict(options)


def run_model(session, model, inputs=None, *, out_dir=None, **options):
    """Session.run_model: compile into out_dir (kept), or into a temporary directory that is
    removed (compiled "dir" and "library_path" are None then), run once."""
    _need_compiler()
    session._check()
    model = os.fspath(model)
    o = _compile_options(session, options)
    names, arrays, given = _values(inputs)
    made = out_dir is None
    d = tempfile.mkdtemp(prefix="tether-run-") if made else os.fspath(out_dir)
    art = None
    try:
        res = _compile(model, d, arrays, names, session=session, **o)
        art = Artifact(d, session=session)
        feed = bind_inputs(art.inputs, _runtime(names, given, res["bound"]), "model")
        outs = art.run(tuple(feed))
        if made:
            res["dir"] = res["library_path"] = None
        outs.compiled = res
        return outs
    finally:
        if art is not None:
            art.close()
        if made:
            shutil.rmtree(d, ignore_errors=True)


# ---- A/B ------------------------------------------------------------------------------------


class OutputComparison(NamedTuple):
    """How one output compared with the truth: integer and bool outputs exactly (rtol = atol =
    0), float outputs within rtol/atol (each type's defaults unless ab() was given them)."""

    equal: bool
    exact: bool
    rtol: Optional[float]
    atol: Optional[float]
    mismatches: Optional[int]  # elements that differ (None: dtype or shape differs)
    max_abs_difference: float


@dataclasses.dataclass
class ABVariant:
    """One side of an A/B: its compile options and figures, outputs, and latency (seconds per
    call: one entry per repeat, and their median, quartiles, min, max, mean)."""

    label: str
    options: dict
    dir: Optional[str]
    outputs: Dict[str, np.ndarray]
    outputs_equal: bool
    max_abs_difference: float
    call: CallResult
    stack_bytes: int
    seconds: List[float]
    number: int
    zero_timer: bool
    median: float
    q1: float
    q3: float
    mean: float
    min: float
    max: float
    text: int
    data: int
    bss: int
    code: int
    library_bytes: Optional[int]
    params_bytes: int
    workspace_bytes: int
    static_stack: Optional[int]
    ratio: Optional[dict]  # this variant's time over the baseline's (None for the baseline)
    compiled: dict = dataclasses.field(repr=False, default_factory=dict)
    # per output: OutputComparison (exact for integer and bool outputs)
    output_comparisons: Dict[str, OutputComparison] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class ABResult:
    """What Session.ab measured: variants by label (the first is the baseline every ratio is
    taken against), whether a reference interpreter run was the ground truth (else the baseline's
    outputs), and the measurement's settings. str() prints the table."""

    model: str
    target: str
    variants: Dict[str, ABVariant]
    baseline: str
    reference: bool
    rtol: Optional[float]  # None: each float output's type's default (OutputComparison says)
    atol: Optional[float]
    repeat: int
    min_repeat_ms: int

    @property
    def outputs_equal(self):
        return all(v.outputs_equal for v in self.variants.values())

    def __getitem__(self, label):
        return self.variants[label]

    def to_dict(self):
        d = dataclasses.asdict(self)
        for v in d["variants"].values():
            v["outputs"] = {k: a.tolist() for k, a in v["outputs"].items()}
            v["call"] = dict(self.variants[v["label"]].call._asdict())
            v["output_comparisons"] = {
                k: c._asdict() for k, c in self.variants[v["label"]].output_comparisons.items()}
        return d

    def __str__(self):
        vs = list(self.variants.values())
        us = lambda x: f"{x * 1e6:.3f}"  # noqa: E731
        rows = [
            ("outputs equal", [("yes" if v.outputs_equal else "NO") for v in vs]),
            ("max |difference|", [f"{v.max_abs_difference:.3g}" for v in vs]),
            ("text / data / bss", [f"{v.text} / {v.data} / {v.bss}" for v in vs]),
            ("instructions", [str(v.code) for v in vs]),
            ("library bytes", [str(v.library_bytes) for v in vs]),
            ("params / workspace", [f"{v.params_bytes} / {v.workspace_bytes}" for v in vs]),
            ("static stack", [str(v.static_stack) if v.static_stack is not None else "unbounded"
                              for v in vs]),
            ("stack high-water", [str(v.stack_bytes) for v in vs]),
            ("median us", [us(v.median) for v in vs]),
            ("IQR us", [us(v.q3 - v.q1) for v in vs]),
            ("min..max us", [f"{us(v.min)}..{us(v.max)}" for v in vs]),
            ("calls per repeat", [str(v.number) for v in vs]),
            (f"ratio to {self.baseline}",
             [("-" if v.ratio is None else f"{v.ratio['estimate']:.3f}x {v.ratio['verdict']}")
              for v in vs]),
        ]
        heads = [v.label for v in vs]
        w0 = max(len(r[0]) for r in rows)
        ws = [max(len(h), *(len(r[1][i]) for r in rows)) for i, h in enumerate(heads)]
        lines = [f"{self.model} on {self.target}: {self.repeat} repeats, "
                 f"{'reference interpreter' if self.reference else self.baseline} as truth",
                 "  ".join([" " * w0] + [h.rjust(w) for h, w in zip(heads, ws)])]
        for name, cells in rows:
            lines.append("  ".join([name.ljust(w0)] + [c.rjust(w) for c, w in zip(cells, ws)]))
        return "\n".join(lines)


def _variants(variants):
    if isinstance(variants, dict):
        out = {}
        for label, o in variants.items():
            if not isinstance(o, dict):
                raise TypeError(f"variant '{label}': its options must be a dict")
            out[str(label)] = dict(o)
    else:
        out = {}
        for v in variants:
            if v not in ("packed", "unpacked"):
                raise ValueError(f"variant '{v}': name an ABI (packed, unpacked) or give "
                                 "variants as {label: {compile options}}")
            out[v] = {"abi": v}
    if not out:
        raise ValueError("no variants")
    return out


def _compare(got, want, rtol, atol):
    """(equal, worst |difference|, {output: (equal, exact, rtol, atol, mismatches, worst)}):
    integer and bool outputs exactly, float outputs within rtol/atol (None: the defaults of each
    output's type, _dtypes.default_tolerance), NaN equal to NaN."""
    if set(got) != set(want):
        return False, float("inf"), {}
    equal, worst, per = True, 0.0, {}
    for k, a in got.items():
        b = want[k]
        tol = default_tolerance(from_numpy(b.dtype))
        if a.shape != b.shape or a.dtype != b.dtype:
            equal = False
            per[k] = (False, tol is None, None, None, None, float("inf"))
            worst = float("inf")
            continue
        if tol is None:  # integers and bool: exact, as integers (never through a double)
            bad = int(np.count_nonzero(a != b))
            w = float(np.abs(a.astype(np.float64) - b.astype(np.float64)).max()) if bad else 0.0
            per[k] = (bad == 0, True, 0.0, 0.0, bad, w)
        else:
            rt = tol[0] if rtol is None else rtol
            at = tol[1] if atol is None else atol
            a64, b64 = a.astype(np.float64), b.astype(np.float64)
            with np.errstate(invalid="ignore"):
                diff = np.abs(a64 - b64)
                both_nan = np.isnan(a64) & np.isnan(b64)
                same_inf = np.isinf(a64) & (a64 == b64)
                ok = (diff <= at + rt * np.abs(b64)) | both_nan | same_inf
            diff = np.where(both_nan | same_inf, 0.0, diff)
            w = float(np.nanmax(diff)) if diff.size and not np.isnan(diff).all() else 0.0
            if diff.size and np.isnan(diff).any():
                w = float("nan")
            bad = int(ok.size - np.count_nonzero(ok))
            per[k] = (bad == 0, False, rt, at, bad, w)
        equal &= per[k][0]
        w = per[k][5]
        worst = w if (w != w or w > worst) else worst
    return equal, worst, per


def ab(session, model, inputs=None, *, variants=("unpacked", "packed"), number=1, repeat=15,
       min_repeat_ms=50, rtol=None, atol=None, out_dir=None, **options):
    """Session.ab: see docs/python.md."""
    _need_compiler()
    session._check()
    model = os.fspath(model)
    if not 1 <= int(repeat) <= 200:
        raise ValueError("repeat must be in 1..200")
    if int(number) < 1 or int(min_repeat_ms) < 0:
        raise ValueError("number must be >= 1 and min_repeat_ms >= 0")
    repeat, number, min_repeat_ms = int(repeat), int(number), int(min_repeat_ms)
    sides = _variants(variants)
    base_opts = _compile_options(session, options)
    names, arrays, given = _values(inputs)
    shapes = _shape_specs(options.get("input_shapes"))
    sig = _tether.model_signature(model, input_shapes=shapes,
                                  input_values=_value_specs(arrays) if arrays else None,
                                  input_names=names if arrays else None,
                                  loop_max=int(options.get("loop_max", 0)))
    if inputs is None:  # generated in each input's type, fixed seed: runs see the same bytes
        rng = np.random.default_rng(20261123)
        for n, d, s in sig["inputs"]:
            try:
                arrays.append(generate(d, s, rng))
            except ValueError as e:
                raise ValueError(f"input '{n}': {e}") from None
            given.append(arrays[-1])
    # the reference interpreter (every element type) is the truth
    made = out_dir is None
    root = tempfile.mkdtemp(prefix="tether-ab-") if made else os.fspath(out_dir)
    os.makedirs(root, exist_ok=True)
    arts = {}
    try:
        compiled = {}
        for label, o in sides.items():
            opts = dict(base_opts)
            opts.update(o)
            unknown = [k for k in opts if k not in _COMPILE_KEYS]
            if unknown:
                raise TypeError(f"variant '{label}': unknown option '{unknown[0]}'")
            d = os.path.join(root, re.sub(r"[^A-Za-z0-9_.-]", "_", label))
            compiled[label] = _compile(model, d, arrays, names, session=session, **opts)
            sides[label] = opts
        first = next(iter(compiled.values()))
        runtime = _runtime(names, given, first["bound"])
        given = dict(zip(names, given)) if names is not None else tuple(given)
        truth = reference(model, given or None, input_shapes=options.get("input_shapes"),
                          loop_max=options.get("loop_max", 0))
        results = {}
        base_label = next(iter(sides))
        numbers = {label: number for label in sides}
        zero = {label: False for label in sides}
        times = {label: [] for label in sides}

        def start(label):
            arts[label] = Artifact(compiled[label]["dir"], session=session)
            outs = arts[label].run(runtime)
            results[label] = {"outputs": dict(outs), "call": outs.call}

        def time_once(label):
            st = arts[label].time(numbers[label], 1, min_repeat_ms, 0)
            numbers[label] = max(numbers[label], st.number)
            zero[label] |= st.zero_timer
            return st.seconds[0]

        if session.info.get("load_size_bytes"):
            # an MCU board holds one module at a time: each variant is prepared, measured and
            # released in turn (as `tether ab` does there)
            for label in sides:
                start(label)
                time_once(label)  # warm-up: sets the calls per repeat
                for _ in range(repeat):
                    times[label].append(time_once(label))
                arts.pop(label).close()
        else:
            for label in sides:
                start(label)
            for label in sides:  # warm-up: sets the calls per repeat
                time_once(label)
            order = list(sides)
            for r in range(repeat):
                for label in (order if r % 2 == 0 else order[::-1]):
                    times[label].append(time_once(label))
        want = truth if truth is not None else results[base_label]["outputs"]
        out = {}
        for label in sides:
            c = compiled[label]
            sp = _tether.spread(times[label])
            eq, worst, per = _compare(results[label]["outputs"], want, rtol, atol)
            ratio = None if label == base_label else _tether.ratio(times[base_label],
                                                                   times[label])
            out[label] = ABVariant(
                label=label, options=sides[label], dir=None if made else c["dir"],
                outputs=results[label]["outputs"], outputs_equal=eq, max_abs_difference=worst,
                output_comparisons={k: OutputComparison(*v) for k, v in per.items()},
                call=results[label]["call"], stack_bytes=results[label]["call"].stack_bytes,
                seconds=times[label], number=numbers[label], zero_timer=zero[label],
                median=sp["median"], q1=sp["q1"], q3=sp["q3"], mean=sp["mean"], min=sp["min"],
                max=sp["max"], text=c["text"], data=c["data"], bss=c["bss"], code=c["code"],
                library_bytes=c["library_bytes"], params_bytes=c["params_bytes"],
                workspace_bytes=c["workspace_bytes"], static_stack=c["static_stack"],
                ratio=ratio, compiled=dict(c, dir=None, library_path=None) if made else c)
        return ABResult(model=model, target=compiled[base_label]["target"],
                        variants=out, baseline=base_label, reference=truth is not None,
                        rtol=rtol, atol=atol, repeat=repeat, min_repeat_ms=min_repeat_ms)
    finally:
        for art in arts.values():
            art.close()
        if made:
            shutil.rmtree(root, ignore_errors=True)
