#!/usr/bin/env python3
"""A short tour of the tether Python package (docs/python.md), runnable as it is:

    PYTHONPATH=build/host/python/site python3 examples/python/quickstart.py [DEVICE_URL]

DEVICE_URL defaults to local: (a tetherd child process); tcp://127.0.0.1:9090 reaches a tetherd
started with `build/device/tetherd/tetherd --tcp 127.0.0.1:9090`. The example model is the
keyword-spotting network of examples/kws. test_python_example (ctest) runs this file; it must
stay short, quick (a few seconds) and exit non-zero when a result is wrong.
"""

import os
import sys
import tempfile

import numpy as np

import tether

KWS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "kws", "kws.json")


def main(url):
    x = np.random.default_rng(0).uniform(-1, 1, (1, 1, 49, 10)).astype(np.float32)
    with tether.Session(url) as s:
        print(f"device: {s.info['triple']} ({s.info['cpu'] or 'baseline'}), "
              f"scopes {', '.join(s.info['scopes'])}")

        # arrays: numpy in, numpy out
        a = s.array(np.arange(12, dtype=np.float32).reshape(3, 4))
        assert (a.numpy() == np.arange(12).reshape(3, 4)).all()

        # a model, compiled for this device into a temporary directory and run once
        outs = s.run_model(KWS, x)
        ref = tether.reference(KWS, x)  # the compiler's reference interpreter, on this machine
        err = float(np.abs(outs["probs"] - ref["probs"]).max())
        print(f"kws: class {int(outs['probs'].argmax())} in {outs.call.elapsed_ns / 1e3:.1f} us, "
              f"stack {outs.call.stack_bytes} bytes, max |device - reference| {err:.2g}")
        assert err < 1e-5

        # an artifact compiled once, prepared once, run and timed many times
        with tempfile.TemporaryDirectory() as d:
            target, cpu = tether.device_target(s.info)  # what run_model and ab compile for
            built = tether.compile(KWS, d, abi="unpacked", target=target, cpu=cpu)
            print(f"compiled: {built['library_bytes']} bytes, static stack "
                  f"{built['static_stack']} bytes")
            with s.load_artifact(d) as art:
                print("inputs:", art.inputs)
                y = art.run(x)["probs"]
                assert np.allclose(y, ref["probs"], rtol=1e-4, atol=1e-6)
                t = art.time(number=100, repeat=5)
                print(f"artifact: median {t.median * 1e6:.2f} us per inference "
                      f"(min {t.min * 1e6:.2f}, max {t.max * 1e6:.2f})")

        # A/B of the packed and the unpacked ABI, measured interleaved
        r = s.ab(KWS, x, repeat=5, min_repeat_ms=10)
        print(r)
        assert r.outputs_equal
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "local:"))
