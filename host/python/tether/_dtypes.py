"""numpy <-> tether dtypes, and turning user data into the arrays a signature declares.

What must stay true: an ndarray (or other array-like) input must already have the declared dtype
and shape (no silent casts); only plain Python data (numbers, nested lists) is converted to the
declared dtype, and only when every value is representable in it (an integer dtype takes no
fractions and nothing out of its range, a float dtype nothing that would overflow to inf). One
rule says what is one input and what is several (split_inputs; docs/python.md): a dict is by
name, a tuple is several inputs, a list is one array when its elements are numbers or nested
lists/tuples and several inputs otherwise (a list of arrays), anything else is one input. Every
array handed to the C layer is C-contiguous and in native byte order. Errors name the input and
both sides ("input 'x': shape (1, 3), but the artifact's is (1, 4)"), the shape being the one
the user wrote.
"""

import numbers

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


def _bfloat16():
    """ml_dtypes' bfloat16 numpy dtype when ml_dtypes is installed, else None (numpy has none)."""
    try:
        import ml_dtypes  # optional: the usual numpy bfloat16 (jax, tensorflow use it)
    except ImportError:
        return None
    return np.dtype(ml_dtypes.bfloat16)


def to_numpy(name):
    """The numpy dtype of a tether dtype name; bfloat16 is ml_dtypes.bfloat16 when ml_dtypes is
    installed, else the name itself (numpy has none: such arrays are refused naming it)."""
    if name in _NUMPY_NAMES:
        return np.dtype(name)
    if name == "bfloat16":
        return _bfloat16() or name
    return name


def from_numpy(dtype):
    """The tether name of a numpy dtype (TypeError for one tether has no name for)."""
    try:
        dt = np.dtype(dtype)
    except TypeError as e:
        raise TypeError(f"not a dtype: {dtype!r}") from e
    bf = _bfloat16()
    if bf is not None and dt == bf:  # (np.dtype(...) == None compares with float64)
        return "bfloat16"
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


def is_array_like(value):
    """An ndarray, a numpy scalar or an object numpy reads as an array (its dtype is its own)."""
    return isinstance(value, np.generic) or any(
        hasattr(value, a) for a in ("__array_interface__", "__array_struct__", "__array__")
    )


def _is_number(value):
    return isinstance(value, (numbers.Number, np.generic))


def is_one_array(value):
    """Plain Python data that is ONE array: a number, or a list whose elements are numbers or
    nested lists/tuples (an empty list is no inputs)."""
    if isinstance(value, list):
        return bool(value) and all(_is_number(v) or isinstance(v, (list, tuple)) for v in value)
    return _is_number(value)


def split_inputs(inputs):
    """The rule for what is one input and what is several: (names or None, values).

    None: no inputs; a dict: by name; a tuple: several inputs in order; a list: one array when
    its elements are numbers or nested lists (x.tolist()), else several inputs (a list of
    arrays); anything else (an ndarray, a number): one input."""
    if inputs is None:
        return None, []
    if isinstance(inputs, dict):
        return [str(k) for k in inputs], list(inputs.values())
    if isinstance(inputs, tuple):
        return None, list(inputs)
    if isinstance(inputs, list):
        return (None, [inputs]) if is_one_array(inputs) else (None, list(inputs))
    return None, [inputs]


def plain_array(value, label):
    """Plain Python data (a number or nested lists) as an ndarray of numpy's own dtype for it;
    ValueError/TypeError naming `label` when it is not a rectangular array of numbers."""
    if not (_is_number(value) or isinstance(value, (list, tuple))):
        raise TypeError(
            f"{label}: {type(value).__name__} is not an array, a number or a (nested) list"
        )
    try:
        raw = np.array(value)
    except (ValueError, TypeError):
        raw = None
    if raw is None or raw.dtype == object:
        raise ValueError(
            f"{label}: not a rectangular array of numbers (a nested list whose rows differ in "
            "length, or an integer beyond 64 bits)"
        )
    if raw.dtype.kind not in "biuf":
        raise TypeError(f"{label}: elements of type {raw.dtype} are not real numbers")
    return raw


def _fit(raw, want, label):
    """raw (plain data made an array) converted to want, refusing what want cannot represent."""
    with np.errstate(all="ignore"):
        arr = raw.astype(want)
        if want.kind == "f":
            bad = np.isfinite(raw) & ~np.isfinite(arr)
        else:
            bad = arr != raw
    if np.any(bad):
        idx = tuple(int(i) for i in np.argwhere(bad)[0]) if raw.ndim else ()
        value = raw[idx].item()
        where = f" (at index {idx[0] if len(idx) == 1 else idx})" if idx else ""
        raise ValueError(f"{label}: the value {value!r}{where} does not fit {want}")
    return arr


def check_array(value, name, dtype, shape, what="input", owner="artifact"):
    """value as an ndarray of exactly dtype and shape (ValueError naming `what` 'name', or `what`
    alone when name is None, otherwise).

    Array-likes must match the dtype already; plain Python data is converted when every value
    fits the dtype.
    """
    label = f"{what} '{name}'" if name is not None else what
    if value is None:
        raise ValueError(f"{label}: missing (None given)")
    want = to_numpy(dtype)
    if not isinstance(want, np.dtype):
        raise ValueError(f"{label}: dtype {dtype} has no numpy equivalent (install ml_dtypes "
                         "for bfloat16)")
    plain = not is_array_like(value)
    if plain:
        arr = plain_array(value, label)
    else:
        arr = np.asarray(value)
        if arr.dtype.byteorder not in ("=", "|"):
            arr = arr.astype(arr.dtype.newbyteorder("="))
        if arr.dtype != want:
            raise ValueError(f"{label}: dtype {arr.dtype}, but the {owner}'s is {want}")
    if tuple(arr.shape) != tuple(shape):
        raise ValueError(
            f"{label}: shape {tuple(arr.shape)}, but the {owner}'s is {tuple(shape)}"
        )
    if plain:
        arr = _fit(arr, want, label)
    return native(arr)


def _count_hint(inputs, nspecs):
    """Why the number of inputs given differs, when the rule of split_inputs is the reason."""
    if isinstance(inputs, list) and is_one_array(inputs):
        try:
            shape = f"of shape {np.shape(inputs)}"
        except ValueError:
            shape = "not rectangular"
        return (f": a list of numbers or nested lists is one array (here {shape}); give several "
                "inputs as a tuple, a list of arrays or a dict by name")
    if isinstance(inputs, tuple) and nspecs == 1:
        return ": a tuple is a sequence of inputs; give one array as an ndarray or a list"
    return ""


def bind_inputs(specs, inputs, owner):
    """inputs (one array, several as a tuple or a list of arrays, or a dict by name: the rule of
    split_inputs) as a list of ndarrays in the order of specs (IOSpec-like: name, shape, dtype),
    each checked."""
    names = [s.name for s in specs]
    if isinstance(inputs, dict):
        unknown = [k for k in inputs if k not in names]
        if unknown:
            raise ValueError(
                f"unknown input '{unknown[0]}' (the {owner}'s inputs: {', '.join(names) or 'none'})"
            )
        missing = [n for n in names if n not in inputs]
        if missing:
            raise ValueError(f"missing input '{missing[0]}' (the {owner} needs {', '.join(names)})")
        values = [inputs[n] for n in names]
    else:
        values = split_inputs(inputs)[1]
    if len(values) != len(specs):
        raise ValueError(
            f"the {owner} has {len(specs)} input{'s' if len(specs) != 1 else ''} "
            f"({', '.join(names) or 'none'}), {len(values)} given"
            f"{_count_hint(inputs, len(specs))}"
        )
    return [
        check_array(v, s.name, s.dtype_name, s.shape, "input", owner) for v, s in zip(values, specs)
    ]


# default tolerances of each float type (tether/compare.h); integer and bool compare exactly
_TOLERANCE = {"float16": (1e-3, 1e-3), "bfloat16": (1e-2, 1e-2), "float32": (1e-4, 1e-5),
              "float64": (1e-4, 1e-5)}


def default_tolerance(name):
    """(rtol, atol) of a tether dtype name: float16 1e-3/1e-3, bfloat16 1e-2/1e-2, float32 and
    float64 1e-4/1e-5; None for integer and bool types (compared exactly)."""
    return _TOLERANCE.get(name)


def generate(name, shape, rng):
    """Reproducible inputs of a tether dtype: floats uniform in [-1, 1), signed integers in
    [-8, 8), unsigned in [0, 16), bool False/True (the CLI's ranges, tether_fill_inputs)."""
    want = to_numpy(name)
    if not isinstance(want, np.dtype):
        raise ValueError(f"dtype {name} has no numpy equivalent (install ml_dtypes for bfloat16)")
    if name == "bool":
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if want.kind == "i":
        return rng.integers(-8, 8, size=shape).astype(want)
    if want.kind == "u":
        return rng.integers(0, 16, size=shape).astype(want)
    return rng.uniform(-1.0, 1.0, size=shape).astype(np.float32).astype(want)
