"""Sessions on a device, remote arrays, uploaded modules and their functions.

What must stay true: a RemoteArray or Function is usable only on the session (and the
connection generation) that made it: after close() or reconnect() it raises ValueError instead of
sending a stale handle. Remote arrays are freed on free(), on garbage collection and with their
session; a failing free during garbage collection is silent. Array data crosses as numpy arrays
of exactly the array's dtype and shape.
"""

import os
import shutil
from typing import NamedTuple, Tuple

import numpy as np

from . import _tether
from ._dtypes import check_array, from_numpy, native, to_numpy

Error = _tether.Error

_MODULE_KINDS = {
    "shared_object": _tether.MODULE_SHARED_OBJECT,
    "opencl_source": _tether.MODULE_OPENCL_SOURCE,
    "mcu_image": _tether.MODULE_MCU_IMAGE,
}


def _error(message, status=-3):
    """A tether.Error raised by the Python layer (default status TETHER_ERR_UNSUPPORTED)."""
    names = {-1: "TETHER_ERR_INVALID_ARG", -3: "TETHER_ERR_UNSUPPORTED", -5: "TETHER_ERR_NOT_FOUND"}
    e = Error(message)
    e.status = status
    e.status_name = names.get(status, "TETHER_ERR_UNKNOWN")
    return e


class CallResult(NamedTuple):
    """One call on the device: the function's return code, the device time, the stack high-water
    mark, and a packed function's return value (None when it set none)."""

    ret: int
    elapsed_ns: int
    stack_bytes: int
    value: object = None

    @property
    def seconds(self):
        return self.elapsed_ns * 1e-9


class TimeStats(NamedTuple):
    """TIME with TVM semantics: seconds per call, one entry per repeat, and their summary.
    number is the calls per repeat the device used (grown to fill min_repeat_ms)."""

    mean: float
    median: float
    min: float
    max: float
    seconds: Tuple[float, ...]
    number: int
    repeat: int
    zero_timer: bool
    kernel_median: Tuple[float, ...] = ()

    @classmethod
    def _of(cls, d):
        return cls(
            d["mean"],
            d["median"],
            d["min"],
            d["max"],
            tuple(d["seconds"]),
            d["number"],
            d["repeat"],
            d["zero_timer"],
            tuple(d.get("kernel_median", ())),
        )


def _find_tetherd():
    """local: runs $TETHER_TETHERD, else the tetherd this package was built or installed with,
    else tetherd from PATH."""
    env = os.environ.get("TETHER_TETHERD")
    if env:
        return env
    try:
        from . import _paths

        path = _paths.TETHERD
        if _paths.TETHERD_RELATIVE:
            path = os.path.normpath(os.path.join(os.path.dirname(__file__), path))
        if os.access(path, os.X_OK):
            return path
    except ImportError:
        pass
    return shutil.which("tetherd") or "tetherd"


def _firmware_dirs():
    """Where an MCU board's firmware builds are looked for (after $TETHER_FIRMWARE): those this
    package was built or installed with (the build tree's device/mcu, the installed
    share/tether/firmware)."""
    try:
        from . import _paths

        dirs = list(getattr(_paths, "FIRMWARE_DIRS", ()))
        if getattr(_paths, "FIRMWARE_RELATIVE", False):
            here = os.path.dirname(__file__)
            dirs = [os.path.normpath(os.path.join(here, d)) for d in dirs]
        return dirs
    except ImportError:
        return []


def _read_token(token, token_file):
    if token is not None:
        if isinstance(token, str):
            token = token.encode()
        return bytes(token)
    path = token_file or os.environ.get("TETHER_TOKEN_FILE")
    if not path:
        return None
    with open(path, "rb") as f:
        return f.read(4096).rstrip(b"\r\n ")


class Session:
    """A session on one device: tetherd (tcp://HOST:PORT, or local:, which spawns
    `tetherd --stdio` as a child), an MCU board (uart://, tcp-serial://) or a pooled device
    (pool://). HELLO (and AUTH) happen here; `info` is the device's HELLO.

        with tether.Session("local:") as s:
            x = s.array(np.ones(16, np.float32))

    url: None = $TETHER_DEVICE, else local:. timeout_ms: per request (0 = 30000). token /
    token_file ($TETHER_TOKEN_FILE): the shared auth token. tetherd: the program local: runs.
    wait_ms: a serial device held by another process: 0 fail at once, -1 wait, >0 wait that long.
    firmware: an MCU board's firmware.json (or its folder, or a folder of per-board folders), for
    linking artifacts at its load region; None: $TETHER_FIRMWARE, then the firmware builds this
    package was built or installed with.
    Closing frees every remote array, module and artifact of the session on the device.
    """

    def __init__(self, url=None, *, timeout_ms=0, token=None, token_file=None, tetherd=None,
                 wait_ms=0, firmware=None):
        if url is None:
            url = os.environ.get("TETHER_DEVICE") or "local:"
        if not isinstance(url, str):
            raise TypeError(f"url must be a str, not {type(url).__name__}")
        if not isinstance(timeout_ms, int) or timeout_ms < 0:
            raise ValueError("timeout_ms must be an int >= 0 (0 = 30000)")
        self.url = url
        self.firmware = None if firmware is None else os.fspath(firmware)
        self._generation = 0
        self._info = None
        quiet = not os.environ.get("TETHER_VERBOSE")
        self._c = _tether.Session(url, timeout_ms, _read_token(token, token_file),
                                  tetherd or _find_tetherd(), int(wait_ms), quiet)

    # ---- lifetime ----

    def close(self):
        """Ends the session (idempotent). Every handle of it becomes invalid."""
        c = getattr(self, "_c", None)
        if c is not None and not c.closed:
            self._generation += 1
            c.close()

    @property
    def closed(self):
        return self._c.closed

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return f"<tether.Session {self.url} {'closed' if self.closed else 'open'}>"

    def _check(self):
        if self._c.closed:
            raise ValueError("the session is closed")

    @property
    def info(self):
        """The device's HELLO as a dict (the keys of `tether info --json`)."""
        if self._info is None:
            self._info = self._c.info()
        return dict(self._info)

    @property
    def fault(self):
        """The fault or restart that ended the session ("CALL failed: ..."), or None."""
        return self._c.fault()

    def reconnect(self):
        """A new session on the same device (after a fault, or at any time). Every array,
        module and artifact of the old one is gone."""
        self._generation += 1
        self._info = None
        self._c.reconnect()

    def device_log(self):
        """Device LOG lines received since the last call, as (level, text); level 0 error,
        1 warning, 2 info, 3 debug."""
        return self._c.take_log()

    # ---- arrays ----

    def empty(self, shape, dtype="float32", *, scope="global", pool=None):
        """Allocates an array on the device (contents undefined). scope: global, texture or
        texture:weight; pool: a pool the device lists in info['pools'], None = its default."""
        if isinstance(shape, (int, np.integer)):
            shape = (int(shape),)
        shape = tuple(int(d) for d in shape)
        name = from_numpy(dtype)
        handle, nbytes = self._c.alloc(shape, name, scope, pool)
        return RemoteArray(self, handle, shape, name, nbytes, scope, pool)

    def array(self, data, dtype=None, *, scope="global", pool=None):
        """Allocates an array shaped like data and copies data in (numpy in)."""
        arr = np.asarray(data, dtype=dtype)
        arr = native(arr)
        a = self.empty(arr.shape, arr.dtype, scope=scope, pool=pool)
        try:
            a.copy_from(arr)
        except BaseException:
            a.free()
            raise
        return a

    def zeros(self, shape, dtype="float32", *, scope="global", pool=None):
        """An array of zeros on the device."""
        a = self.empty(shape, dtype, scope=scope, pool=pool)
        a.copy_from(np.zeros(a.shape, a.dtype))
        return a

    # ---- modules ----

    def upload(self, data, name, *, kind="shared_object"):
        """Uploads bytes (or a file path) as module `name` without loading it. kind:
        shared_object (.so for tetherd), opencl_source, mcu_image. Returns True when the device
        held these bytes already (tetherd's upload cache) and none were sent."""
        if kind not in _MODULE_KINDS:
            raise ValueError(f"kind must be one of {', '.join(_MODULE_KINDS)}")
        if isinstance(data, (str, os.PathLike)):
            return self._c.upload_file(_MODULE_KINDS[kind], name, os.fspath(data))
        return self._c.upload(_MODULE_KINDS[kind], name, data)

    def load_module(self, name):
        """Loads an uploaded module; returns a Module."""
        handle, nfuncs = self._c.load_module(name)
        return Module(self, name, handle, nfuncs)

    def upload_module(self, path, name=None):
        """Uploads and loads a module file (.so for tetherd, .cl OpenCL C, .bin MCU image); the
        device checks its SHA-256. name: default the file name."""
        path = os.fspath(path)
        kind = self._c.module_kind(path)
        if kind < 0:
            raise _error(
                f"{path}: object code must be linked for the board first (the tether CLI does "
                f"that: `tether upload {os.path.basename(path)}`)"
            )
        name = name or os.path.basename(path)
        cached = self._c.upload_file(kind, name, path)
        m = self.load_module(name)
        m.cached = cached
        return m

    def function(self, name):
        """A function of the device's system library (module 0)."""
        return Module(self, "", 0, -1).function(name)

    # ---- models and artifacts ----

    def load_artifact(self, path):
        """Opens a compiled artifact directory and prepares it here (upload, load, params,
        arrays). Returns an Artifact; close it (or the session) to free it on the device."""
        from ._artifact import Artifact

        return Artifact(path, session=self)

    def run_model(self, model, inputs=None, *, out_dir=None, **options):
        """Compiles MODEL (.json or .onnx) for this device, runs it once on `inputs` and returns
        the outputs (tether.Outputs: a dict name -> ndarray with .call and .compiled). inputs:
        one array (an ndarray or plain data such as x.tolist(), converted to the model's dtype),
        several as a tuple or a list of arrays, or a dict by name. The artifact goes to out_dir
        (kept) or to a temporary directory removed before returning (then .compiled["dir"] and
        ["library_path"] are None). Options as for tether.compile (abi, opt_level, target, cpu,
        params, input_shapes, ...); without target the device's own."""
        from ._model import run_model

        return run_model(self, model, inputs, out_dir=out_dir, **options)

    def ab(self, model, inputs=None, **options):
        """Compiles MODEL in several variants (default: the unpacked and the packed ABI), runs
        them on this device, compares their outputs and measures their latency interleaved.
        Returns a tether.ABResult; see docs/python.md."""
        from ._model import ab

        return ab(self, model, inputs, **options)


class RemoteArray:
    """An array on the device (dense, row-major). Freed by free(), garbage collection or the
    session's close. copy_from(ndarray) writes it, numpy() reads it."""

    def __init__(self, session, handle, shape, dtype_name, nbytes, scope="global", pool=None):
        self.session = session
        self.handle = handle
        self.shape = tuple(shape)
        self.dtype = to_numpy(dtype_name)
        self._dtype_name = dtype_name
        self.nbytes = nbytes
        self.scope = scope
        self.pool = pool
        self._generation = session._generation
        self._freed = False

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def ndim(self):
        return len(self.shape)

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a 0-d array")
        return self.shape[0]

    @property
    def valid(self):
        """True while the array can be used: not freed, its session open and not reconnected."""
        return (
            not self._freed
            and self._generation == self.session._generation
            and not self.session.closed
        )

    def _h(self):
        if self._freed:
            raise ValueError("the array was freed")
        if self.session.closed:
            raise ValueError("the session is closed")
        if self._generation != self.session._generation:
            raise ValueError("the array belongs to the session before reconnect()")
        return self.handle

    def copy_from(self, data):
        """Writes data (an ndarray of exactly this dtype and shape, or plain Python data) into
        the array."""
        arr = check_array(data, None, self._dtype_name, self.shape, "data", "remote array")
        self.session._c.copy_to(self._h(), 0, arr)
        return self

    def numpy(self):
        """Reads the array into a new ndarray."""
        if not isinstance(self.dtype, np.dtype):
            raise ValueError(f"dtype {self.dtype} has no numpy equivalent")
        out = np.empty(self.shape, self.dtype)
        self.session._c.copy_from(self._h(), 0, out)
        return out

    def __array__(self, dtype=None):
        out = self.numpy()
        return out if dtype is None else out.astype(dtype)

    def free(self):
        """Frees the array on the device (idempotent; nothing to do once its session is gone)."""
        if self._freed:
            return
        self._freed = True
        if self._generation == self.session._generation and not self.session.closed:
            self.session._c.free(self.handle)

    def __del__(self):
        try:
            self.free()
        except Exception:
            pass

    def __repr__(self):
        state = "" if self.valid else " (invalid)"
        return (f"<tether.RemoteArray {self.dtype} {list(self.shape)} scope={self.scope}"
                f"{' pool=' + self.pool if self.pool else ''} handle={self.handle}{state}>")


class Module:
    """A module loaded on the device. function(name) (or module[name]) looks a function up.
    cached: upload_module found its bytes in the device's upload cache (nothing was sent)."""

    def __init__(self, session, name, handle, num_functions):
        self.session = session
        self.name = name
        self.handle = handle
        self.num_functions = num_functions
        self.cached = False
        self._generation = session._generation

    def function(self, name):
        if self._generation != self.session._generation:
            raise ValueError("the module belongs to the session before reconnect()")
        handle, abi, num_args, fname = self.session._c.get_function(self.handle, name)
        return Function(self.session, (handle, abi, num_args, fname))

    __getitem__ = function

    def __repr__(self):
        return f"<tether.Module {self.name!r} handle={self.handle} functions={self.num_functions}>"


def _arg(session, i, x):
    if isinstance(x, RemoteArray):
        if x.session is not session:
            raise ValueError(f"argument {i}: the array belongs to another session")
        return (_tether.TYPE_DLTENSOR, x._h())
    if x is None:
        return (_tether.TYPE_NULL, 0)
    if isinstance(x, (bool, np.bool_)):
        return (_tether.TYPE_INT, int(x))
    if isinstance(x, (int, np.integer)):
        v = int(x)
        if -(1 << 63) <= v < (1 << 63):
            return (_tether.TYPE_INT, v)
        if 0 <= v < (1 << 64):
            return (_tether.TYPE_UINT, v)
        raise ValueError(f"argument {i}: {v} does not fit 64 bits")
    if isinstance(x, (float, np.floating)):
        return (_tether.TYPE_FLOAT, float(x))
    if isinstance(x, np.ndarray):
        raise TypeError(
            f"argument {i}: a numpy array must be on the device first (session.array(x))"
        )
    raise TypeError(f"argument {i}: {type(x).__name__} is not a RemoteArray, int, float or None")


class Function:
    """A function on the device. Calling it runs it once: f(a, b, 3, 2.0) -> CallResult.
    Arrays are RemoteArrays (DLTensors for packed functions, pointers for unpacked ones);
    ints, floats and None are scalars (packed functions only)."""

    def __init__(self, session, desc):
        self.session = session
        self._desc = desc
        self.name = desc[3]
        self.abi = desc[1]
        self.num_args = desc[2]
        self._generation = session._generation

    def _args(self, args):
        if self._generation != self.session._generation:
            raise ValueError("the function belongs to the session before reconnect()")
        if self.num_args >= 0 and len(args) != self.num_args:
            raise ValueError(f"{self.name} takes {self.num_args} arguments, {len(args)} given")
        return [_arg(self.session, i, x) for i, x in enumerate(args)]

    def __call__(self, *args):
        return CallResult(*self.session._c.call(self._desc, self._args(args)))

    def time(self, *args, number=10, repeat=3, min_repeat_ms=0, cooldown_ms=0):
        """TIME on the device: `repeat` (1..32) repeats of `number` calls each (grown until a
        repeat lasts min_repeat_ms). Returns TimeStats (seconds per call)."""
        d = self.session._c.time(self._desc, self._args(args), int(number), int(repeat),
                                 int(min_repeat_ms), int(cooldown_ms))
        return TimeStats._of(d)

    def __repr__(self):
        return f"<tether.Function {self.name} abi={self.abi} args={self.num_args}>"

