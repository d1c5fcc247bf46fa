"""numpy <-> tether dtypes, and turning user arrays into what a signature declares.

What must stay true: an ndarray input must already have the declared dtype and shape (no silent
casts); only plain Python data (lists, scalars) is converted to the declared dtype. Every array
handed to the C layer is C-contiguous and in native byte order. Errors name the input and both
sides ("input 'x': shape (1, 3), but the artifact's is (1, 4)").
"""

import numpy as np

# dtypes with a numpy equivalent (tether's names are numpy's spellings)
_NUMPY_NAMES = frozenset(
    (
        "float16",
        "float32",
        "float64",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "bool",
    )
)


def to_numpy(name):
    """The numpy dtype of a tether dtype name; the name itself when numpy has none (bfloat16)."""
    if name in _NUMPY_NAMES:
        return np.dtype(name)
    return name


def from_numpy(dtype):
    """The tether name of a numpy dtype (TypeError for one tether has no name for)."""
    try:
        dt = np.dtype(dtype)
    except TypeError as e:
        raise TypeError(f"not a dtype: {dtype!r}") from e
    name = "bool" if dt == np.bool_ else dt.name
    if name not in _NUMPY_NAMES:
        raise TypeError(
            f"dtype {dt} is not supported (one of: {', '.join(sorted(_NUMPY_NAMES))})"
        )
    return name


def native(arr):
    """arr C-contiguous in native byte order (a copy only when needed)."""
    if arr.dtype.byteorder not in ("=", "|"):
        arr = arr.astype(arr.dtype.newbyteorder("="))
    return np.ascontiguousarray(arr)


def check_array(value, name, dtype, shape, what="input", owner="artifact"):
    """value as an ndarray of exactly dtype and shape (ValueError naming `what` 'name', or `what`
    alone when name is None, otherwise).

    ndarrays and numpy scalars must match the dtype already; plain Python data is converted.
    """
    label = f"{what} '{name}'" if name is not None else what
    if value is None:
        raise ValueError(f"{label}: missing (None given)")
    want = to_numpy(dtype)
    if not isinstance(want, np.dtype):
        raise ValueError(f"{label}: dtype {dtype} has no numpy equivalent")
    if hasattr(value, "__array_interface__") or isinstance(value, np.generic):
        arr = np.asarray(value)
        if arr.dtype.byteorder not in ("=", "|"):
            arr = arr.astype(arr.dtype.newbyteorder("="))
        if arr.dtype != want:
            raise ValueError(
                f"{label}: dtype {arr.dtype}, but the {owner}'s is {want}"
            )
    else:
        try:
            arr = np.asarray(value, dtype=want)
        except (TypeError, ValueError) as e:
            raise TypeError(
                f"{label}: cannot make a {want} array of {type(value).__name__}: {e}"
            ) from None
    if tuple(arr.shape) != tuple(shape):
        raise ValueError(
            f"{label}: shape {tuple(arr.shape)}, but the {owner}'s is {tuple(shape)}"
        )
    return native(arr)


def bind_inputs(specs, inputs, owner):
    """inputs (one array, a sequence in signature order, or a dict by name) as a list of
    ndarrays in the order of specs (IOSpec-like: name, shape, dtype), each checked."""
    names = [s.name for s in specs]
    if inputs is None:
        values = []
    elif isinstance(inputs, dict):
        unknown = [k for k in inputs if k not in names]
        if unknown:
            raise ValueError(
                f"unknown input '{unknown[0]}' (the {owner}'s inputs: {', '.join(names) or 'none'})"
            )
        missing = [n for n in names if n not in inputs]
        if missing:
            raise ValueError(f"missing input '{missing[0]}' (the {owner} needs {', '.join(names)})")
        values = [inputs[n] for n in names]
    elif isinstance(inputs, (list, tuple)):
        values = list(inputs)
    else:
        values = [inputs]
    if len(values) != len(specs):
        raise ValueError(
            f"the {owner} has {len(specs)} input{'s' if len(specs) != 1 else ''} "
            f"({', '.join(names) or 'none'}), {len(values)} given"
        )
    return [
        check_array(v, s.name, s.dtype_name, s.shape, "input", owner) for v, s in zip(values, specs)
    ]
