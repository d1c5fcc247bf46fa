"""test_python (with test_tether.py): outputs of data-dependent size in the Python package
(docs/python.md, docs/onnx.md "Data-dependent output sizes"): a JSON model whose output is a
NonZero with its bound capped at 4 comes back at its actual shape from an artifact, run_model,
reference and ab (the extent output not among the outputs); a count above the bound raises
tether.Error naming the output and the bound.

What must stay true: only local: is used (the library spawns and stops its tetherd); the
temporary directory is removed.
"""

import json
import os
import shutil
import tempfile
import unittest

import numpy as np

import tether

MODEL = {"format": "tether-model", "version": 1, "name": "nz",
         "tensors": [{"name": "x", "dtype": "float32", "shape": [6]}],
         "inputs": ["x"], "outputs": ["y"],
         "nodes": [{"name": "nz", "op": "nonzero", "inputs": ["x"], "outputs": ["y"],
                    "attrs": {"ints": [4]}}]}
TWO = np.array([0, 3, 0, 0, -1, 0], np.float32)
FIVE = np.array([1, 2, 0, 4, 5, 6], np.float32)
WANT = np.array([[1, 4]], np.int64)


class DynamicOutputs(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="tether-dyn-")
        self.model = os.path.join(self.dir, "nz.json")
        with open(self.model, "w") as f:
            json.dump(MODEL, f)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_actual_shapes(self):
        ref = tether.reference(self.model, TWO)
        self.assertEqual(list(ref), ["y"])
        np.testing.assert_array_equal(ref["y"], WANT)
        d = os.path.join(self.dir, "art")
        tether.compile(self.model, d)
        with tether.Session("local:") as s:
            with s.load_artifact(d) as art:
                self.assertEqual([o.name for o in art.outputs], ["y"])
                self.assertEqual(art.outputs[0].shape, (1, 4))  # the bound
                self.assertEqual(art.dynamic, {"y": 1})
                outs = art.run(TWO)
                self.assertEqual(list(outs), ["y"])
                self.assertEqual(outs["y"].dtype, np.int64)
                np.testing.assert_array_equal(outs["y"], WANT)
                with self.assertRaisesRegex(tether.Error,
                                            r"output 'y' \(at most 4 along dimension 1\)"):
                    art.run(FIVE)
            outs = s.run_model(self.model, TWO)
            np.testing.assert_array_equal(outs["y"], WANT)
            r = s.ab(self.model, TWO, repeat=2, min_repeat_ms=0)
            self.assertTrue(r.outputs_equal)
        with self.assertRaisesRegex(tether.Error, "more than its bound 4"):
            tether.reference(self.model, FIVE)


if __name__ == "__main__":
    unittest.main()


class LoopMax(unittest.TestCase):
    """loop_max (docs/python.md): ONNX's test_loop11, a Loop whose trip count is a graph input
    with a scan output, does not compile without it (the error names the option) nor with a
    negative one; with it the model compiles and runs (6 iterations against a bound of 5 is an
    error); reference takes it too."""

    MODEL = os.path.join(os.environ.get("TETHER_SOURCE_DIR", "."), "..", "shared",
                         "onnx-node-full", "test_loop11", "model.onnx")

    def setUp(self):
        if not os.path.isfile(self.MODEL):
            self.skipTest("no conformance data beside the checkout")
        self.dir = tempfile.mkdtemp(prefix="tether-loopmax-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_loop_max(self):
        ins = [np.array(3, np.int64), np.array(True), np.array([-2], np.float32)]
        d = os.path.join(self.dir, "art")
        with self.assertRaisesRegex(tether.Error, "loop-max"):
            tether.compile(self.MODEL, d)
        with self.assertRaisesRegex(ValueError, "loop_max must be >= 0"):
            tether.compile(self.MODEL, d, loop_max=-1)
        ref = tether.reference(self.MODEL, ins, loop_max=5)  # M bound as a constant here
        outs = list(ref)
        want = np.array([[-1], [1], [4]], np.float32)  # y += x[i], x = 1, 2, 3, ...
        np.testing.assert_array_equal(ref[outs[1]], want)
        # with the bound the Loop compiles (the body's Slice by the iteration number becomes a
        # run-time Gather) and runs: 3 iterations give 3 scan rows; 6 is over the bound of 5
        tether.compile(self.MODEL, d, loop_max=5)
        with tether.Session("local:") as s:
            with s.load_artifact(d) as art:
                outs = art.run(tuple(ins))
                got = outs[list(outs)[1]]
                np.testing.assert_array_equal(got[:3], want)
                over = [np.array(6, np.int64), np.array(True), np.array([-2], np.float32)]
                with self.assertRaises(tether.Error):
                    art.run(tuple(over))
