"""test_python: the tether Python package (host/python, docs/python.md) end to end.

Runs against a local: tetherd (spawned by the library) and a tetherd this module starts on
127.0.0.1 (a free port from the kernel, a token, two pools) and always stops. Every check is of
a real outcome: bytes that come back equal what went in, functions of the test module
(tests/device/testmod.c) and compiled models agree with numpy, the reference interpreter and the
CLI, timing statistics are ordered, and every error is a Python exception (tether.Error with the
library's message, ValueError/TypeError for bad arguments), never a crash.

Environment (set by tests/python/CMakeLists.txt): PYTHONPATH (the built package), TETHERD,
TESTMOD, TETHER_CLI, TETHER_SOURCE_DIR.

What must stay true: every tetherd started here binds 127.0.0.1 only and is stopped by
tearDownModule (also after failures); ports come from the kernel, never a fixed number; the
whole run stays well under a minute.
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import unittest

import numpy as np

import tether

TETHERD = os.environ["TETHERD"]
TESTMOD = os.environ["TESTMOD"]
TETHER_CLI = os.environ.get("TETHER_CLI")
SOURCE = os.environ["TETHER_SOURCE_DIR"]
KWS = os.path.join(SOURCE, "examples", "kws", "kws.json")
ONNX_NODE = os.path.join(SOURCE, "..", "shared", "onnx-node")
TOKEN = b"python-test-token-0123456789"

_daemons = []


class Daemon:
    """A tetherd on 127.0.0.1, port chosen by the kernel (--tcp 127.0.0.1:0 --port-file)."""

    def __init__(self, *extra):
        self.dir = tempfile.mkdtemp(prefix="tether-pytest-")
        port_file = os.path.join(self.dir, "port")
        self.log = open(os.path.join(self.dir, "log"), "wb")
        self.proc = subprocess.Popen(
            [TETHERD, "--tcp", "127.0.0.1:0", "--port-file", port_file, "--work-dir", self.dir,
             *extra], stdout=subprocess.DEVNULL, stderr=self.log)
        _daemons.append(self)
        for _ in range(500):
            try:
                with open(port_file) as f:
                    self.port = int(f.read().strip())
                break
            except (OSError, ValueError):
                if self.proc.poll() is not None:
                    raise RuntimeError(f"tetherd exited with {self.proc.returncode}")
                time.sleep(0.01)
        else:
            raise RuntimeError("tetherd did not report its port")
        self.url = f"tcp://127.0.0.1:{self.port}"

    def stop(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        if self in _daemons:
            _daemons.remove(self)


DAEMON = None
TMP = None


def setUpModule():
    global DAEMON, TMP
    TMP = tempfile.mkdtemp(prefix="tether-pytest-data-")
    token_file = os.path.join(TMP, "token")
    with open(token_file, "wb") as f:
        f.write(TOKEN + b"\n")
    DAEMON = Daemon("--token-file", token_file, "--pool", "dram", "--pool", "sram:65536")


def tearDownModule():
    for d in list(_daemons):
        d.stop()
    shutil.rmtree(TMP, ignore_errors=True)


def tcp_session(**kw):
    return tether.Session(DAEMON.url, token=TOKEN, **kw)


SESSIONS = (("local", lambda: tether.Session("local:")), ("tcp", tcp_session))

# A small model: s = x + y; h = relu(s @ w + b). Two inputs, two outputs.
W = np.arange(32, dtype=np.float32).reshape(8, 4) / 16.0 - 1.0
B = np.array([0.5, -0.25, 0.0, 1.0], np.float32)


def write_mlp(path):
    model = {
        "format": "tether-model", "version": 1, "name": "mlp",
        "tensors": [
            {"name": "x", "dtype": "float32", "shape": [2, 8]},
            {"name": "y", "dtype": "float32", "shape": [2, 8]},
            {"name": "w", "shape": [8, 4], "data": W.ravel().tolist()},
            {"name": "b", "shape": [4], "data": B.tolist()},
        ],
        "inputs": ["x", "y"],
        "outputs": ["h", "s"],
        "nodes": [
            {"name": "add", "op": "add", "inputs": ["x", "y"], "outputs": ["s"]},
            {"name": "fc", "op": "dense", "inputs": ["s", "w", "b"], "outputs": ["d"]},
            {"name": "act", "op": "relu", "inputs": ["d"], "outputs": ["h"]},
        ],
    }
    with open(path, "w") as f:
        json.dump(model, f)
    return path


def mlp_numpy(x, y):
    s = x + y
    return np.maximum(s @ W + B, 0), s


# Every element type tether computes (numpy names), with a value generator for each.
TYPED = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
         "float32", "float64")


TYPED_MODELS = (TYPED[:6], TYPED[6:])  # the unpacked ABI takes at most 24 arguments


def write_typed(path, types):
    """A model with one add per numeric type of types (a_T + b_T -> s_T), greater on int64 (bool
    out) when it has int64, and not on a bool input."""
    tensors, inputs, outputs, nodes = [], [], [], []
    for t in types:
        for n in ("a", "b"):
            tensors.append({"name": f"{n}_{t}", "dtype": t, "shape": [2, 3]})
            inputs.append(f"{n}_{t}")
        nodes.append({"name": f"add_{t}", "op": "add", "inputs": [f"a_{t}", f"b_{t}"],
                      "outputs": [f"s_{t}"]})
        outputs.append(f"s_{t}")
    tensors.append({"name": "m", "dtype": "bool", "shape": [4]})
    inputs.append("m")
    if "int64" in types:
        nodes.append({"name": "gt", "op": "greater", "inputs": ["a_int64", "b_int64"],
                      "outputs": ["g"]})
        outputs.append("g")
    nodes.append({"name": "not", "op": "not", "inputs": ["m"], "outputs": ["nm"]})
    outputs.append("nm")
    model = {"format": "tether-model", "version": 1, "name": "typed", "tensors": tensors,
             "inputs": inputs, "outputs": outputs, "nodes": nodes}
    with open(path, "w") as f:
        json.dump(model, f)
    return path


def typed_inputs(types=TYPED):
    rng = np.random.default_rng(7)
    ins = {}
    for t in types:
        info = np.iinfo(t) if np.dtype(t).kind in "iu" else None
        for n in ("a", "b"):
            if info is not None:  # the extremes too: wrapping is numpy's
                v = rng.integers(info.min, info.max, size=(2, 3), dtype=t, endpoint=True)
                v.flat[0] = info.max
            else:
                v = rng.uniform(-4, 4, size=(2, 3)).astype(t)
            ins[f"{n}_{t}"] = v
    ins["m"] = np.array([True, False, False, True])
    return ins


def typed_numpy(ins, types):
    with np.errstate(over="ignore"):
        out = {f"s_{t}": ins[f"a_{t}"] + ins[f"b_{t}"] for t in types}
    if "int64" in types:
        out["g"] = ins["a_int64"] > ins["b_int64"]
    out["nm"] = ~ins["m"]
    return out


class TestTypes(unittest.TestCase):
    """numpy arrays of every dtype in and out of run_model, reference, artifacts and ab."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="tether-py-types-")
        cls.models = [write_typed(os.path.join(cls.tmp, f"typed{i}.json"), types)
                      for i, types in enumerate(TYPED_MODELS)]

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def check(self, outs, want):
        for k, w in want.items():
            self.assertEqual(outs[k].dtype, w.dtype, k)
            if w.dtype.kind == "f":
                np.testing.assert_allclose(outs[k], w, rtol=1e-3 if w.dtype == np.float16
                                           else 1e-6, err_msg=k)
            else:  # integers and bool: exactly
                np.testing.assert_array_equal(outs[k], w, err_msg=k)

    def test_arrays_of_every_dtype(self):
        with tether.Session("local:") as s:
            for t in TYPED + ("bool",):
                x = typed_inputs().get(f"a_{t}", np.array([True, False, True]))
                a = s.array(x)
                self.assertEqual(a.dtype, x.dtype)
                back = a.numpy()
                self.assertEqual(back.dtype, x.dtype)
                self.assertEqual(back.tobytes(), x.tobytes())  # the exact bytes
                a.free()

    def test_run_reference_and_ab(self):
        for model, types in zip(self.models, TYPED_MODELS):
            self.run_reference_and_ab(model, types)

    def run_reference_and_ab(self, model, types):
        ins = typed_inputs(types)
        want = typed_numpy(ins, types)
        ref = tether.reference(model, ins)
        self.check(ref, want)
        t0 = types[0]
        with tether.Session("local:") as s:
            outs = s.run_model(model, ins)
            self.check(outs, want)
            for k in want:  # the device and the interpreter agree bit for bit here
                self.assertEqual(outs[k].tobytes(), ref[k].tobytes(), k)
            r = s.ab(model, repeat=2, min_repeat_ms=1)  # generated inputs of each type
            self.assertTrue(r.reference)
            self.assertTrue(r.outputs_equal)
            c = r["unpacked"].output_comparisons
            self.assertTrue(c["nm"].exact)
            self.assertEqual(c["nm"].mismatches, 0)
            for t in types:
                tol = {"float16": (1e-3, 1e-3), "float32": (1e-4, 1e-5),
                       "float64": (1e-4, 1e-5)}.get(t, (0.0, 0.0))
                self.assertEqual(c[f"s_{t}"].exact, t[0] != "f", t)
                self.assertEqual((c[f"s_{t}"].rtol, c[f"s_{t}"].atol), tol, t)
            self.assertIsNone(r.rtol)
            json.dumps(r.to_dict())
            # a wrong dtype is refused naming the input and both dtypes, before the device
            bad = dict(ins)
            bad[f"a_{t0}"] = ins[f"a_{t0}"].astype(np.int16 if t0 != "int16" else np.int32)
            with self.assertRaisesRegex(ValueError, f"input 'a_{t0}': dtype int"):
                s.run_model(model, bad)
            with self.assertRaisesRegex(ValueError, f"input 'a_{t0}': dtype int"):
                tether.reference(model, bad)

    def test_compare_is_exact_for_integers(self):
        from tether._model import _compare

        a = {"x": np.array([2**53 + 1], np.int64), "h": np.array([1.0], np.float16)}
        b = {"x": np.array([2**53], np.int64), "h": np.array([1.0], np.float16)}
        eq, _, per = _compare(a, b, None, None)
        self.assertFalse(eq)  # equal as doubles, different as integers
        self.assertEqual(per["x"][4], 1)  # mismatches
        a["x"] = b["x"]
        a["h"] = np.array([1.0009765625], np.float16)  # one float16 ulp: within 1e-3
        eq, _, per = _compare(a, b, None, None)
        self.assertTrue(eq)
        eq, _, _ = _compare(a, b, 1e-5, 0.0)  # given tolerances apply to floats
        self.assertFalse(eq)


class TestSession(unittest.TestCase):
    def test_info_and_close(self):
        for kind, open_session in SESSIONS:
            with self.subTest(kind):
                with open_session() as s:
                    info = s.info
                    self.assertEqual(info["triple"].split("-")[0], info["arch"])
                    self.assertIn("global", info["scopes"])
                    self.assertIsNone(s.fault)
                    self.assertFalse(s.closed)
                self.assertTrue(s.closed)
                s.close()  # idempotent
                with self.assertRaisesRegex(ValueError, "closed"):
                    s.empty(4)
        with tcp_session() as s:
            self.assertEqual(s.info["pools"], {"dram": None, "sram": 65536})
            self.assertTrue(s.info["auth_required"])

    def test_array_round_trip(self):
        rng = np.random.default_rng(7)
        for kind, open_session in SESSIONS:
            with self.subTest(kind), open_session() as s:
                for dt in ("float32", "float16", "float64", "int8", "uint8", "int16", "uint16",
                           "int32", "uint32", "int64", "uint64", "bool"):
                    want = rng.integers(0, 256, size=(3, 5, 7), dtype=np.uint8)
                    want = want.view(np.int8).astype(dt) if dt != "bool" else want > 128
                    a = s.array(want)
                    self.assertEqual((a.shape, a.dtype), (want.shape, want.dtype))
                    got = a.numpy()
                    np.testing.assert_array_equal(got, want)
                    self.assertEqual(got.tobytes(), want.tobytes())
                    a.free()
                    a.free()  # idempotent
                    with self.assertRaisesRegex(ValueError, "freed"):
                        a.numpy()
                # non-contiguous and big-endian inputs are made contiguous/native
                base = rng.standard_normal((6, 10)).astype(np.float32)
                a = s.empty((6, 5), np.float32)
                a.copy_from(base[:, ::2])
                np.testing.assert_array_equal(np.asarray(a), base[:, ::2])
                be = base.astype(">f4")
                b = s.array(be)
                np.testing.assert_array_equal(b.numpy(), base)
                c = s.zeros((2, 2), "int32")
                np.testing.assert_array_equal(c.numpy(), np.zeros((2, 2), np.int32))
                c.copy_from([[1, 2], [3, 4]])  # plain data takes the array's dtype
                np.testing.assert_array_equal(c.numpy(), [[1, 2], [3, 4]])
                big = rng.standard_normal(600_000).astype(np.float32)  # several chunks
                np.testing.assert_array_equal(s.array(big).numpy(), big)

    def test_array_errors(self):
        with tether.Session("local:") as s:
            a = s.empty((2, 3), "float32")
            with self.assertRaisesRegex(
                    ValueError, r"data: shape \(3, 2\), but the remote array's is \(2, 3\)"):
                a.copy_from(np.zeros((3, 2), np.float32))
            with self.assertRaisesRegex(ValueError,
                                        "dtype float64, but the remote array's is float32"):
                a.copy_from(np.zeros((2, 3)))
            with self.assertRaises(TypeError):
                s.empty(3, "complex64")
            with self.assertRaisesRegex(ValueError, "negative"):
                s.empty((2, -1))
            with self.assertRaisesRegex(ValueError, "scope"):
                s.empty(4, scope="shared")
            with self.assertRaises(tether.Error) as cm:
                s.empty(4, pool="nosuchpool")
            self.assertIn("nosuchpool", str(cm.exception))
        with tcp_session() as s:
            a = s.array(np.ones(1000, np.float32), pool="sram")
            self.assertEqual(a.pool, "sram")
            with self.assertRaises(tether.Error):  # over the pool's 64 KiB
                s.empty(100_000, pool="sram")

    def test_module_functions(self):
        for kind, open_session in SESSIONS:
            with self.subTest(kind), open_session() as s:
                m = s.upload_module(TESTMOD, name="testmod")
                self.assertEqual(m.num_functions, 12)
                again = s.upload_module(TESTMOD, name="testmod-again")  # tetherd's upload cache
                self.assertTrue(again.cached)
                self.assertEqual(again.num_functions, 12)
                with open(TESTMOD, "rb") as f:
                    self.assertTrue(s.upload(f.read(), "testmod-bytes"))
                x = np.linspace(-2, 2, 16, dtype=np.float32)
                y = np.arange(16, dtype=np.float32)
                a, b, out = s.array(x), s.array(y), s.empty(16)
                add = m.function("add_packed")
                self.assertEqual((add.abi, add.num_args), ("packed", 3))
                r = add(a, b, out)
                self.assertEqual(r.ret, 0)
                np.testing.assert_array_equal(out.numpy(), x + y)
                mul = m["mul_unpacked"]
                self.assertEqual(mul.abi, "unpacked")
                mul(a, b, out)
                np.testing.assert_array_equal(out.numpy(), x * y)
                ins = [s.array(np.full(4, k, np.float32)) for k in range(16)]
                acc = s.empty(4)
                m.function("sum16")(*ins, acc)
                np.testing.assert_array_equal(acc.numpy(), np.full(4, sum(range(16)), np.float32))
                chk = s.empty(1, "int32")
                r = m.function("big_stack")(chk)
                self.assertGreaterEqual(r.stack_bytes, 64 * 1024)
                self.assertEqual(int(chk.numpy()[0]), 0)  # buf[i] = (uint8)i at multiples of 4096
                t = add.time(a, b, out, number=20, repeat=5)
                self.assertEqual(len(t.seconds), 5)
                self.assertGreater(t.median, 0)
                self.assertTrue(t.min <= t.median <= t.max)
                self.assertTrue(t.min <= t.mean <= t.max)
                self.assertGreaterEqual(t.number, 20)
                # argument errors never reach the device
                with self.assertRaisesRegex(ValueError, "takes 3 arguments, 2 given"):
                    add(a, b)
                with self.assertRaisesRegex(TypeError, "session.array"):
                    add(a, b, np.zeros(16, np.float32))
                with self.assertRaises(TypeError):
                    add(a, b, "out")
                # the function's own check, reported by the device
                i32 = s.empty(16, "int32")
                with self.assertRaises(tether.Error) as cm:
                    add(a, b, i32)
                self.assertIn("dtype must be float32", str(cm.exception))
                self.assertEqual(cm.exception.status_name, "TETHER_ERR_MISMATCH")
                with self.assertRaises(tether.Error) as cm:
                    m.function("no_such_function")
                self.assertIn("no_such_function", str(cm.exception))

    def test_crash_and_reconnect(self):
        with tcp_session() as s:
            m = s.upload_module(TESTMOD)
            a = s.array(np.ones(4, np.int32))
            with self.assertRaises(tether.Error) as cm:
                m.function("crash")(a)
            self.assertEqual(cm.exception.status_name, "TETHER_ERR_CRASHED")
            self.assertIn("crash", str(cm.exception))
            self.assertIsNotNone(s.fault)
            s.reconnect()
            self.assertIsNone(s.fault)
            with self.assertRaisesRegex(ValueError, "reconnect"):
                a.numpy()
            with self.assertRaisesRegex(ValueError, "reconnect"):
                m.function("noop")
            m = s.upload_module(TESTMOD)
            self.assertEqual(m.function("noop")().ret, 0)

    def test_threads_share_a_session(self):
        with tether.Session("local:") as s:
            add = s.upload_module(TESTMOD).function("add_packed")
            errors = []

            def work(k):
                try:
                    x = np.full(64, k, np.float32)
                    a, b, o = s.array(x), s.array(x), s.empty(64)
                    for _ in range(20):
                        add(a, b, o)
                        np.testing.assert_array_equal(o.numpy(), 2 * x)
                except Exception as e:  # noqa: BLE001 - reported below
                    errors.append(e)

            threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            self.assertEqual(errors, [])


class TestErrors(unittest.TestCase):
    def test_bad_url(self):
        with self.assertRaises(ValueError) as cm:  # a bad argument (TestInputRules has more)
            tether.Session("foo://nowhere")
        self.assertIn("foo://nowhere", str(cm.exception))
        with self.assertRaises(TypeError):
            tether.Session(42)

    def test_refused_and_auth(self):
        with socket.socket() as held:  # bound, not listening: connections are refused
            held.bind(("127.0.0.1", 0))
            url = f"tcp://127.0.0.1:{held.getsockname()[1]}"
            with self.assertRaises(tether.Error) as cm:
                tether.Session(url, timeout_ms=2000)
        self.assertIn("127.0.0.1", str(cm.exception))
        self.assertEqual(cm.exception.status_name, "TETHER_ERR_IO")
        with self.assertRaises(tether.Error) as cm:
            tether.Session(DAEMON.url, token=b"wrong token")
        self.assertEqual(cm.exception.status_name, "TETHER_ERR_AUTH")
        with self.assertRaises(tether.Error):
            tether.Session(DAEMON.url)  # no token

    def test_daemon_killed_mid_session(self):
        d = Daemon()
        s = tether.Session(d.url, timeout_ms=3000)
        a = s.array(np.arange(8, dtype=np.float32))
        np.testing.assert_array_equal(a.numpy(), np.arange(8, dtype=np.float32))
        d.stop(signal.SIGKILL)  # the session process dies with it (PDEATHSIG)
        with self.assertRaises(tether.Error) as cm:
            for _ in range(3):
                a.numpy()
                time.sleep(0.1)
        self.assertIn(cm.exception.status_name, ("TETHER_ERR_IO", "TETHER_ERR_TIMEOUT"))
        s.close()
        self.assertTrue(s.closed)


class TestModels(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="tether-pytest-models-")
        cls.mlp = write_mlp(os.path.join(cls.dir, "mlp.json"))
        rng = np.random.default_rng(3)
        cls.x = rng.uniform(-1, 1, (2, 8)).astype(np.float32)
        cls.y = rng.uniform(-1, 1, (2, 8)).astype(np.float32)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_run_model_against_numpy(self):
        h, s_ = mlp_numpy(self.x, self.y)
        for kind, open_session in SESSIONS:
            with open_session() as s:
                for abi in ("packed", "unpacked"):
                    with self.subTest(kind=kind, abi=abi):
                        outs = s.run_model(self.mlp, [self.x, self.y], abi=abi)
                        self.assertEqual(list(outs), ["h", "s"])
                        np.testing.assert_allclose(outs["h"], h, rtol=1e-5, atol=1e-6)
                        np.testing.assert_array_equal(outs["s"], s_)
                        self.assertEqual(outs.call.ret, 0)
                        self.assertGreater(outs.call.stack_bytes, 0)
                        self.assertEqual(outs.compiled["report"]["abi"], abi)
                by_name = s.run_model(self.mlp, {"y": self.y, "x": self.x}, opt_level=1)
                np.testing.assert_allclose(by_name["h"], h, rtol=1e-5, atol=1e-6)
        ref = tether.reference(self.mlp, [self.x, self.y])
        np.testing.assert_allclose(ref["h"], h, rtol=1e-5, atol=1e-6)

    def test_profile(self):
        """Artifact.profile: per-node records of a profiling build (docs/profile.md); a plain
        artifact is refused."""
        x = np.random.default_rng(5).uniform(-1, 1, (1, 1, 49, 10)).astype(np.float32)
        d, plain = os.path.join(self.dir, "kws-prof"), os.path.join(self.dir, "kws-plain")
        tether.compile(KWS, d, profile=True)
        tether.compile(KWS, plain)
        trace = os.path.join(self.dir, "kws.trace.json")
        with tcp_session() as s:
            with s.load_artifact(d) as art:
                p = art.profile(x, runs=5, trace=trace)
                ref = art.run(x)
            self.assertIsInstance(p, tether.Profile)
            self.assertEqual([n["name"] for n in p][-2:], ["fc", "softmax"])
            for n in p:
                self.assertGreater(n["median_ns"], 0)
                self.assertEqual(len(n["ns"]), 5)
                self.assertIn(" -> ", n["shapes"])
                self.assertIsNone(n["stack_bytes"])
            self.assertAlmostEqual(sum(n["share"] for n in p), 1.0, places=6)
            self.assertTrue(0.9 * p.call_ns <= p.sum_ns <= 1.1 * p.call_ns)
            np.testing.assert_array_equal(p.outputs["probs"], ref["probs"])
            with open(trace, encoding="utf-8") as f:
                events = [e for e in json.load(f)["traceEvents"] if e["ph"] == "X"]
            self.assertEqual(len(events), 5 * len(p))
            with s.load_artifact(plain) as art:
                with self.assertRaisesRegex(tether.Error, "not a profiling build"):
                    art.profile(x)

    def test_kws_against_interpreter_and_cli(self):
        x = np.random.default_rng(5).uniform(-1, 1, (1, 1, 49, 10)).astype(np.float32)
        ref = tether.reference(KWS, x)
        self.assertEqual(ref["probs"].shape, (1, 12))
        self.assertAlmostEqual(float(ref["probs"].sum()), 1.0, places=5)
        with tcp_session() as s:
            outs = s.run_model(KWS, {"mfcc": x})
        np.testing.assert_allclose(outs["probs"], ref["probs"], rtol=1e-4, atol=1e-6)
        if TETHER_CLI:  # the CLI's interpreter writes the same numbers
            inp, out = os.path.join(self.dir, "in.npy"), os.path.join(self.dir, "ref.npy")
            np.save(inp, x)
            subprocess.run([TETHER_CLI, "run", KWS, "--reference", "--in", inp, "--out", out],
                           check=True, stdout=subprocess.DEVNULL)
            np.testing.assert_array_equal(tether.load_array(out), ref["probs"])

    def test_artifact(self):
        d = os.path.join(self.dir, "mlp-art")
        res = tether.compile(self.mlp, d, abi="unpacked", opt_level=2)
        self.assertTrue(res["built"])
        self.assertGreater(res["text"], 0)
        self.assertGreater(res["library_bytes"], 0)
        self.assertEqual(res["report"]["model"], "mlp")
        self.assertEqual(res["report"]["opt_level"], "2")
        h, s_ = mlp_numpy(self.x, self.y)
        with tether.Session("local:") as s:
            with s.load_artifact(d) as art:
                self.assertEqual([i.name for i in art.inputs], ["x", "y"])
                self.assertEqual(art.inputs[0].shape, (2, 8))
                self.assertEqual(art.inputs[0].dtype, np.float32)
                self.assertEqual([o.name for o in art.outputs], ["h", "s"])
                for outs in (art.run([self.x, self.y]), art.run({"x": self.x, "y": self.y}),
                             art.run(x=self.x, y=self.y), art.run((self.x, self.y.tolist()))):
                    np.testing.assert_allclose(outs["h"], h, rtol=1e-5, atol=1e-6)
                    np.testing.assert_array_equal(outs["s"], s_)
                self.assertGreater(art.last.stack_bytes, 0)
                t = art.time(number=5, repeat=4)
                self.assertEqual(len(t.seconds), 4)
                self.assertTrue(0 < t.min <= t.median <= t.max)
                with self.assertRaisesRegex(ValueError,
                                            r"input 'y': shape \(8, 2\), but the artifact's is "
                                            r"\(2, 8\)"):
                    art.run([self.x, self.y.T.copy()])
                with self.assertRaisesRegex(ValueError, "input 'x': dtype float64"):
                    art.run([self.x.astype(np.float64), self.y])
                with self.assertRaisesRegex(ValueError, "missing input 'y'"):
                    art.run({"x": self.x})
                with self.assertRaisesRegex(ValueError, "unknown input 'z'"):
                    art.run({"x": self.x, "y": self.y, "z": self.y})
                with self.assertRaisesRegex(ValueError, "2 inputs"):
                    art.run(self.x)
            with self.assertRaisesRegex(ValueError, "closed|prepare"):
                art.run([self.x, self.y])
            art2 = s.load_artifact(d)
        with self.assertRaisesRegex(ValueError, "closed"):
            art2.run([self.x, self.y])  # freed with its session
        with self.assertRaises(tether.Error) as cm:
            tether.Artifact(os.path.join(self.dir, "no-such-dir"))
        self.assertIn("no-such-dir", str(cm.exception))
        with self.assertRaises(tether.Error) as cm:
            tether.compile(os.path.join(self.dir, "missing.json"), os.path.join(self.dir, "x"))
        self.assertIn("missing.json", str(cm.exception))

    def test_ab(self):
        with tcp_session() as s:
            r = s.ab(KWS, repeat=4, min_repeat_ms=5)
        self.assertEqual(list(r.variants), ["unpacked", "packed"])
        self.assertTrue(r.reference)
        self.assertTrue(r.outputs_equal)
        u, p = r["unpacked"], r["packed"]
        np.testing.assert_allclose(u.outputs["probs"], p.outputs["probs"], rtol=1e-4, atol=1e-6)
        for v in (u, p):
            self.assertEqual(len(v.seconds), 4)
            self.assertTrue(0 < v.min <= v.median <= v.max)
            self.assertTrue(v.q1 <= v.median <= v.q3)
            self.assertGreater(v.library_bytes, 0)
            self.assertGreater(v.text, 0)
            self.assertGreater(v.stack_bytes, 0)
            self.assertEqual(v.params_bytes, 49360)
        self.assertIsNone(u.ratio)
        self.assertGreater(p.ratio["estimate"], 0)
        self.assertIn(p.ratio["verdict"], ("faster", "slower", "no_significant_difference",
                                            "equal_within_1_percent"))
        table = str(r)
        self.assertIn("unpacked", table)
        self.assertIn("median us", table)
        json.dumps(r.to_dict())
        with tether.Session("local:") as s:  # variants by options, given inputs
            variants = {"O1": {"opt_level": 1}, "O3": {"opt_level": 3, "abi": "unpacked"}}
            r = s.ab(self.mlp, [self.x, self.y], variants=variants, repeat=2, min_repeat_ms=1)
            self.assertEqual(list(r.variants), ["O1", "O3"])
            self.assertTrue(r.outputs_equal)
            np.testing.assert_allclose(r["O3"].outputs["h"], mlp_numpy(self.x, self.y)[0],
                                       rtol=1e-5, atol=1e-6)
            with self.assertRaisesRegex(ValueError, "variant 'fast'"):
                s.ab(self.mlp, variants=("fast",))
            with self.assertRaisesRegex(ValueError, "repeat"):
                s.ab(self.mlp, repeat=0)

    @unittest.skipUnless(os.path.isdir(ONNX_NODE), "../shared/onnx-node is absent")
    def test_onnx(self):
        with tether.Session("local:") as s:
            for name in ("test_relu", "test_reshape_negative_dim"):
                with self.subTest(name):
                    case = os.path.join(ONNX_NODE, name)
                    data = os.path.join(case, "test_data_set_0")
                    ins = sorted(f for f in os.listdir(data) if f.startswith("input_"))
                    inputs = [tether.load_array(os.path.join(data, f)) for f in ins]
                    want = tether.load_array(os.path.join(data, "output_0.pb"))
                    outs = s.run_model(os.path.join(case, "model.onnx"), inputs)
                    got = next(iter(outs.values()))
                    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
                    if len(inputs) > 1:  # the shape input became a constant
                        self.assertEqual(outs.compiled["bound"], [False, True])
                        by_name = s.run_model(os.path.join(case, "model.onnx"),
                                              {"shape": inputs[1], "data": inputs[0]})
                        self.assertEqual(by_name.compiled["bound"], [True, False])
                        np.testing.assert_allclose(next(iter(by_name.values())), want,
                                                   rtol=1e-5, atol=1e-6)
                        # plain lists: the shape bound from a list, the data converted
                        plain = s.run_model(os.path.join(case, "model.onnx"),
                                            tuple(a.tolist() for a in inputs))
                        self.assertEqual(plain.compiled["bound"], [False, True])
                        np.testing.assert_allclose(next(iter(plain.values())), want,
                                                   rtol=1e-5, atol=1e-6)


def write_one_input(path):
    """h = relu(x @ w + b): one input, x (2, 8) float32."""
    model = {
        "format": "tether-model", "version": 1, "name": "one",
        "tensors": [
            {"name": "x", "dtype": "float32", "shape": [2, 8]},
            {"name": "w", "shape": [8, 4], "data": W.ravel().tolist()},
            {"name": "b", "shape": [4], "data": B.tolist()},
        ],
        "inputs": ["x"],
        "outputs": ["h"],
        "nodes": [
            {"name": "fc", "op": "dense", "inputs": ["x", "w", "b"], "outputs": ["d"]},
            {"name": "act", "op": "relu", "inputs": ["d"], "outputs": ["h"]},
        ],
    }
    with open(path, "w") as f:
        json.dump(model, f)
    return path


class TestInputRules(unittest.TestCase):
    """Issue 25: plain Python data is one array of the declared dtype; several inputs are a
    tuple, a list of arrays or a dict; closed artifacts, bad URLs and the default ABI."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="tether-pytest-inputs-")
        cls.one = write_one_input(os.path.join(cls.dir, "one.json"))
        cls.mlp = write_mlp(os.path.join(cls.dir, "mlp.json"))
        rng = np.random.default_rng(11)
        cls.x = rng.uniform(-1, 1, (2, 8)).astype(np.float32)
        cls.y = rng.uniform(-1, 1, (2, 8)).astype(np.float32)
        cls.h = np.maximum(cls.x @ W + B, 0)
        cls.one_art = os.path.join(cls.dir, "one-art")
        cls.mlp_art = os.path.join(cls.dir, "mlp-art")
        tether.compile(cls.one, cls.one_art)
        tether.compile(cls.mlp, cls.mlp_art)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_run_model_takes_lists(self):
        with tether.Session("local:") as s:
            outs = s.run_model(self.one, self.x.tolist())  # was: "dtype float64"
            np.testing.assert_allclose(outs["h"], self.h, rtol=1e-5, atol=1e-6)
            self.assertEqual(outs["h"].dtype, np.float32)
            outs = s.run_model(self.one, {"x": self.x.tolist()})
            np.testing.assert_allclose(outs["h"], self.h, rtol=1e-5, atol=1e-6)
            h, s_ = mlp_numpy(self.x, self.y)
            outs = s.run_model(self.mlp, (self.x.tolist(), self.y.tolist()))
            np.testing.assert_allclose(outs["h"], h, rtol=1e-5, atol=1e-6)
            np.testing.assert_array_equal(outs["s"], s_)
            with self.assertRaisesRegex(ValueError,
                                        r"input 'x': shape \(1, 8\), but the model's is "
                                        r"\(2, 8\)"):
                s.run_model(self.one, self.x[:1].tolist())
        ref = tether.reference(self.one, self.x.tolist())
        np.testing.assert_allclose(ref["h"], self.h, rtol=1e-5, atol=1e-6)

    def test_artifact_list_is_one_array(self):
        with tether.Session("local:") as s:
            with s.load_artifact(self.one_art) as art:
                for given in (self.x.tolist(), [list(r) for r in self.x]):
                    outs = art.run(given)  # was: shape (8,), from reading rows as inputs
                    np.testing.assert_allclose(outs["h"], self.h, rtol=1e-5, atol=1e-6)
                np.testing.assert_allclose(art.run([self.x])["h"], self.h, rtol=1e-5, atol=1e-6)
                with self.assertRaisesRegex(ValueError,
                                            r"input 'x': shape \(2, 7\), but the artifact's is "
                                            r"\(2, 8\)"):
                    art.run(self.x[:, :7].tolist())
                with self.assertRaisesRegex(ValueError, r"input 'x': not a rectangular array"):
                    art.run([[1.0, 2.0], [3.0]])
                with self.assertRaisesRegex(TypeError, r"input 'x'"):
                    art.run([["a"] * 8] * 2)
            h, s_ = mlp_numpy(self.x, self.y)
            with s.load_artifact(self.mlp_art) as art:
                for given in ((self.x.tolist(), self.y.tolist()), [self.x, self.y.tolist()],
                              [self.x, self.y], {"x": self.x.tolist(), "y": self.y}):
                    outs = art.run(given)
                    np.testing.assert_allclose(outs["h"], h, rtol=1e-5, atol=1e-6)
                    np.testing.assert_array_equal(outs["s"], s_)
                # a list of nested lists is one array: the error says so and shows its shape
                with self.assertRaisesRegex(ValueError,
                                            r"2 inputs \(x, y\), 1 given: .*shape \(2, 2, 8\).*"
                                            r"tuple"):
                    art.run([self.x.tolist(), self.y.tolist()])

    def test_plain_data_must_fit_the_dtype(self):
        with tether.Session("local:") as s:
            i = s.empty(3, "int32")
            i.copy_from([1, 2.0, -3])
            np.testing.assert_array_equal(i.numpy(), [1, 2, -3])
            with self.assertRaisesRegex(ValueError, r"data: .*1\.5.*int32"):
                i.copy_from([1, 1.5, 2])  # was: truncated to 1 silently
            u = s.empty(2, "uint8")
            with self.assertRaisesRegex(ValueError, r"data: .*300.*uint8"):
                u.copy_from([1, 300])
            with self.assertRaisesRegex(ValueError, r"data: .*-1.*uint8"):
                u.copy_from([1, -1])
            f = s.empty(2, "float32")
            with self.assertRaisesRegex(ValueError, r"data: .*float32"):
                f.copy_from([1.0, 1e300])
            f.copy_from([0.1, 2])  # rounded to float32, as declared
            np.testing.assert_array_equal(f.numpy(), np.array([0.1, 2], np.float32))
            b = s.empty(2, "bool")
            b.copy_from([True, 0])
            with self.assertRaisesRegex(ValueError, r"data: .*bool"):
                b.copy_from([1, 2])

    def test_compiled_dir_is_kept_or_none(self):
        with tether.Session("local:") as s:
            outs = s.run_model(self.one, self.x)
            self.assertIsNone(outs.compiled["dir"])  # was: a path into a removed directory
            self.assertIsNone(outs.compiled["library_path"])
            self.assertGreater(outs.compiled["library_bytes"], 0)
            self.assertEqual(outs.compiled["report"]["model"], "one")
            keep = os.path.join(self.dir, "kept")
            outs = s.run_model(self.one, self.x, out_dir=keep)
            self.assertEqual(outs.compiled["dir"], keep)
            self.assertTrue(os.path.isfile(outs.compiled["library_path"]))
            with s.load_artifact(keep) as art:  # the kept artifact runs again
                np.testing.assert_allclose(art.run(self.x)["h"], self.h, rtol=1e-5, atol=1e-6)
            r = s.ab(self.one, self.x, repeat=1, min_repeat_ms=0)
            for v in r.variants.values():
                self.assertIsNone(v.dir)
                self.assertIsNone(v.compiled["dir"])
                self.assertIsNone(v.compiled["library_path"])

    def test_closed_artifact_says_closed(self):
        with tether.Session("local:") as s:
            with s.load_artifact(self.one_art) as art:
                art.run(self.x)
            for use in (lambda: art.run(self.x), lambda: art.time()):
                with self.assertRaises(ValueError) as cm:
                    use()
                self.assertRegex(str(cm.exception), "artifact .*closed")
                self.assertNotIn("prepare", str(cm.exception))
            with s.load_artifact(self.one_art) as art:
                s.reconnect()  # its arrays went with the old session
                with self.assertRaisesRegex(ValueError, "before reconnect"):
                    art.run(self.x)
            fresh = tether.Artifact(self.one_art)  # never prepared: says so
            with self.assertRaisesRegex(ValueError, "prepare"):
                fresh.run(self.x)
            fresh.close()
            with self.assertRaisesRegex(ValueError, "artifact .*closed"):
                fresh.prepare(s)

    def test_bad_urls_are_value_errors(self):
        for url in ("foo://nowhere", "", "tcp://127.0.0.1", "tcp://127.0.0.1:99999",
                    "tcp-serial://h:1?baud=9600", "uart://"):
            with self.subTest(url):
                with self.assertRaises(ValueError) as cm:
                    tether.Session(url)
                self.assertFalse(isinstance(cm.exception, tether.Error))
                self.assertIn("URL", str(cm.exception))
        with self.assertRaises(TypeError):
            tether.Session(42)
        s = tether.Session("local:")
        s.close()
        for use in (lambda: s.info, lambda: s.upload_module(TESTMOD), lambda: s.function("x"),
                    lambda: s.upload(b"x", "m"), lambda: s.load_module("m"),
                    lambda: s.run_model(self.one, self.x), lambda: s.load_artifact(self.one_art),
                    lambda: s.empty(3), lambda: s.reconnect()):
            with self.assertRaisesRegex(ValueError, "closed"):
                use()

    def test_default_abi_is_the_clis(self):
        d = os.path.join(self.dir, "default-abi")
        res = tether.compile(self.one, d)
        self.assertEqual(res["report"]["abi"], "unpacked")
        with tether.Session("local:") as s:
            self.assertEqual(s.run_model(self.one, self.x).compiled["report"]["abi"], "unpacked")
        if TETHER_CLI:
            cli = os.path.join(self.dir, "cli-abi")
            subprocess.run([TETHER_CLI, "compile", self.one, "-o", cli], check=True,
                           stdout=subprocess.DEVNULL)
            with open(os.path.join(cli, "report.json")) as f:
                self.assertEqual(json.load(f)["abi"], res["report"]["abi"])


if __name__ == "__main__":
    unittest.main()
