"""Compiled artifact directories (`tether compile`, tether.compile) run on a session.

What must stay true: inputs are checked against the artifact's signature (names, dtype, shape)
before anything reaches the device (one input or several by the rule of _dtypes.split_inputs);
outputs come back as new ndarrays of the declared dtype and shape (an output of data-dependent
size at its actual shape, its extent output not among them); an artifact is prepared on one
session once, and closing either frees its device state. Using an artifact that was closed says
so (never "prepare it first"), as does using one whose session is closed or was reconnected.
"""

import os
from typing import NamedTuple, Tuple

import numpy as np

from . import _tether
from ._dtypes import bind_inputs, to_numpy
from ._session import CallResult, TimeStats


class IOSpec(NamedTuple):
    """An input or output of a signature: name, shape, dtype (a numpy dtype)."""

    name: str
    shape: Tuple[int, ...]
    dtype: object

    @property
    def dtype_name(self):
        return self.dtype if isinstance(self.dtype, str) else ("bool" if self.dtype == np.bool_
                                                              else self.dtype.name)


class Outputs(dict):
    """The outputs of one inference, name -> ndarray in signature order. .call is the
    CallResult (return code, device time, stack high-water mark); .compiled the compile result
    when the model was compiled on the fly (run_model), else None. Its "dir" and
    "library_path" are None unless run_model was given out_dir= (the temporary directory is gone
    by the time the outputs are returned)."""

    def __init__(self, items, call=None, compiled=None):
        super().__init__(items)
        self.call = call
        self.compiled = compiled

    def __repr__(self):
        return f"Outputs({dict.__repr__(self)}, call={self.call!r})"


class Profile(list):
    """Per-node records of Artifact.profile, in execution order (dicts). sum_ns: the median
    over the runs of the node times' sum; call_ns: the median whole profiled call; runs;
    clock_hz (0: OpenCL events); stack (per-node stack measured, a board); call_stack_bytes;
    target; outputs: the last run's Outputs."""

    def __init__(self, res, outputs):
        super().__init__(res["nodes"])
        self.sum_ns = res["sum_ns"]
        self.call_ns = res["call_ns"]
        self.runs = res["runs"]
        self.clock_hz = res["clock_hz"]
        self.opencl = res["opencl"]
        self.stack = res["stack"]
        self.call_stack_bytes = res["call_stack_bytes"]
        self.target = res["target"]
        self.outputs = outputs

    def table(self):
        """The records as text, one line per node: name, op, median microseconds, share."""
        return "\n".join(f"{n['name']:24} {n['op']:12} {n['median_ns'] / 1e3:10.2f} us "
                         f"{100 * n['share']:5.1f}%" for n in self)

    def __repr__(self):
        return (f"<tether.Profile {len(self)} nodes, {self.sum_ns / 1e3:.1f} us of "
                f"{self.call_ns / 1e3:.1f} us, {self.runs} runs>")


class Artifact:
    """An artifact directory: metadata.json plus a library (C backend) or OpenCL C and a launch
    sequence. Pass session= (or call prepare(session)) to put it on a device; then run(inputs)
    and time(). Use as a context manager, or close() it, to free its arrays on the device.

    inputs / outputs: lists of IOSpec. last: the CallResult of the latest run.
    """

    def __init__(self, path, session=None):
        self.dir = os.fspath(path)
        self._c = _tether.Artifact(self.dir)
        info = self._c.info()
        self.backend = info["backend"]
        self.entry = info["entry"]
        self.target = info["target"]
        self.cpu = info["cpu"]
        self.inputs = [IOSpec(n, tuple(s), to_numpy(d)) for n, d, s, _ in info["inputs"]]
        # every output of the signature; .outputs: the model's (without the extent outputs of
        # those of data-dependent size, whose IOSpec shape is the bound; .dynamic: name ->
        # the dimension whose extent is known after a run only)
        self._all_outputs = [IOSpec(n, tuple(s), to_numpy(d)) for n, d, s, _ in info["outputs"]]
        self.outputs = self._all_outputs[:info["model_outputs"]]
        self._dynamic = [tuple(t) for t in info["dynamic"]]
        self.dynamic = {self._all_outputs[i].name: dim for i, dim, _ in self._dynamic}
        self.kernels = [tuple(k) for k in info["kernels"]]  # OpenCL: (kernel, node) per launch
        self.session = None
        self._generation = None
        self._closed = False
        self.last = None
        self.last_kernel_ns = ()
        if session is not None:
            try:
                self.prepare(session)
            except BaseException:
                self.close()
                raise

    def prepare(self, session):
        """Uploads and loads the library (on an MCU board: linked at its load region against its
        firmware first), sets the params and allocates every array on session (once per
        artifact). The session must outlive the artifact's use."""
        if self._closed:
            raise ValueError("the artifact was closed (close() or the end of its with block); "
                             "open it again to prepare it")
        from ._session import _firmware_dirs

        # the host library's device loader: on an MCU board the library is linked against the
        # board's firmware first (tether/device_compile.h)
        self._c.prepare(session._c, getattr(session, "firmware", None), _firmware_dirs())
        self.session = session
        self._generation = session._generation
        return self

    def _check(self):
        if self._closed:
            raise ValueError("the artifact was closed (close() or the end of its with block); "
                             "open it again (Artifact(dir, session) or session.load_artifact) "
                             "to run it")
        if self.session is None:
            raise ValueError("prepare the artifact on a session first (prepare(session), or "
                             "Artifact(dir, session=s))")
        if self.session.closed:
            raise ValueError("the artifact's session is closed")
        if self._generation != self.session._generation:
            raise ValueError("the artifact belongs to the session before reconnect()")

    def run(self, inputs=None, **named):
        """One inference. inputs: one array (an ndarray, or plain data: a number or a nested list
        such as x.tolist()), several in signature order as a tuple or a list of arrays, or a
        dict by name (or keyword arguments). Returns Outputs (name -> ndarray)."""
        self._check()
        if named:
            if inputs is not None:
                raise TypeError("give inputs positionally or by keyword, not both")
            inputs = named
        arrays = bind_inputs(self.inputs, inputs, "artifact")
        for o in self.outputs:
            if not isinstance(o.dtype, np.dtype):
                raise ValueError(f"output '{o.name}': dtype {o.dtype} has no numpy equivalent")
        outs = [np.empty(o.shape, o.dtype) for o in self._all_outputs]
        call, kernel_ns = self._c.run(arrays, outs)
        self.last = CallResult(*call)
        self.last_kernel_ns = tuple(kernel_ns)
        return Outputs(((o.name, a) for o, a in zip(self.outputs, self._trim(outs))), self.last)

    def _trim(self, outs):
        """Each output of data-dependent size at its actual shape (its extent output's value;
        the data are dense at the start of the buffer), the extent outputs left out."""
        outs = list(outs)
        for i, dim, k in self._dynamic:
            shape = list(outs[i].shape)
            shape[dim] = int(outs[k][0])
            n = int(np.prod(shape, dtype=np.int64))
            outs[i] = outs[i].reshape(-1)[:n].reshape(shape).copy()
        return outs[:len(self.outputs)]

    def time(self, number=1, repeat=3, min_repeat_ms=0, cooldown_ms=0):
        """TIME over the inputs of the last run: `repeat` (1..32) repeats of `number` calls
        (grown until a repeat lasts min_repeat_ms). TimeStats in seconds per inference; an
        OpenCL artifact adds each kernel's median (kernel_median)."""
        self._check()
        return TimeStats._of(self._c.time(int(number), int(repeat), int(min_repeat_ms),
                                          int(cooldown_ms)))

    def profile(self, inputs=None, *, runs=20, trace=None, json=None, svg=None, **named):
        """Per-node profile of a profiling build (compiled with profile=True, `tether compile
        --profile`; docs/profile.md): runs the artifact `runs` times on inputs (as run() takes
        them) and returns a Profile, a list of per-node records (dicts: name, op, kernel,
        shapes, schedule, median_ns, share, macs, flops, bytes_in, bytes_out, workspace_live,
        stack_bytes (a board's, else None), ns: the time in each run) with the totals as
        attributes. trace/json/svg: files to write the reports to. An artifact compiled without
        profiling raises tether.Error."""
        self._check()
        if named:
            if inputs is not None:
                raise TypeError("give inputs positionally or by keyword, not both")
            inputs = named
        arrays = bind_inputs(self.inputs, inputs, "artifact")
        outs = [np.empty(o.shape, o.dtype) for o in self._all_outputs]
        paths = [None if p is None else os.fspath(p) for p in (trace, json, svg)]
        res = self._c.profile(arrays, outs, int(runs), *paths)
        return Profile(res, Outputs(((o.name, a) for o, a in zip(self.outputs, self._trim(outs)))))

    def close(self):
        """Frees the artifact and its arrays on the device (idempotent); the artifact cannot be
        used afterwards."""
        self._closed = True
        c = getattr(self, "_c", None)
        if c is not None:
            c.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        ins = ", ".join(f"{i.name}{list(i.shape)}" for i in self.inputs)
        return f"<tether.Artifact {self.dir} {self.backend} {self.target} ({ins})>"
