"""tether for Python: run compiled ML operators and models on devices, numpy in and out.

    import numpy as np
    import tether

    with tether.Session("local:") as s:                 # or "tcp://127.0.0.1:9090"
        outs = s.run_model("examples/kws/kws.json", np.zeros((1, 1, 49, 10), np.float32))
        print(outs["probs"], outs.call.elapsed_ns)
        print(s.ab("examples/kws/kws.json", repeat=5))  # packed vs unpacked ABI

The package is a layer over tether's host library (sessions, uploads, remote arrays, calls,
TIME, artifacts) and its compiler, through the C extension tether._tether. docs/python.md has
the whole API. Failures reported by tether raise tether.Error (a RuntimeError) with .status
(the negative tether_status) and .status_name; bad arguments raise TypeError or ValueError.

What must stay true: this file only re-exports; the behaviour lives in the modules named below.
"""

from . import _tether
from ._artifact import Artifact, IOSpec, Outputs, Profile
from ._model import ABResult, ABVariant, compile, device_target, load_array, reference, targets
from ._session import CallResult, Function, Module, RemoteArray, Session, TimeStats

Error = _tether.Error

try:
    from ._paths import VERSION as __version__
except ImportError:  # pragma: no cover - a package assembled without CMake
    __version__ = "0"

__all__ = [
    "ABResult",
    "ABVariant",
    "Artifact",
    "CallResult",
    "Error",
    "Function",
    "IOSpec",
    "Module",
    "Outputs",
    "Profile",
    "RemoteArray",
    "Session",
    "TimeStats",
    "compile",
    "device_target",
    "load_array",
    "reference",
    "targets",
]
