"""test_python (test_board): the Python package on the QEMU MCU board (mps2-an385, Cortex-M3).

tether.Session("uart:///dev/pts/N").run_model(...) and .ab(...) compile the model for the board
through the host library's one call (tether_compile_for_device: cortex-m3 from its HELLO) and
link the artifact against the board's firmware when it is prepared, as the CLI does. The outputs
must equal the reference interpreter's.

Starts the board itself (scripts/qemu-board --icount, a pty) and always stops it; skipped when
qemu-system-arm, the firmware build or the cortex-m3 compiler is missing.
"""

import os
import select
import shutil
import signal
import subprocess
import time
import unittest

import numpy as np

import tether

SOURCE = os.environ["TETHER_SOURCE_DIR"]
KWS = os.path.join(SOURCE, "examples", "kws", "kws.json")


def _firmware_elf():
    try:
        from tether import _paths
    except ImportError:
        return None
    for d in getattr(_paths, "FIRMWARE_DIRS", ()):
        elf = os.path.join(d, "mps2-an385", "tether-fw.elf")
        if os.path.isfile(elf):
            return elf
    return None


def _cortex_m3():
    try:
        return any(t["name"] == "cortex-m3" and t["available"] for t in tether.targets())
    except Exception:  # no compiler in this build
        return False


FW_ELF = _firmware_elf()
HAVE_BOARD = bool(shutil.which("qemu-system-arm") and FW_ELF and _cortex_m3())


@unittest.skipUnless(HAVE_BOARD, "qemu-system-arm, the mps2-an385 firmware or the cortex-m3 "
                                 "compiler is missing")
class TestBoard(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.board = subprocess.Popen(
            [os.path.join(SOURCE, "scripts", "qemu-board"), "--icount", FW_ELF],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        ready, _, _ = select.select([cls.board.stdout], [], [], 30)
        cls.url = cls.board.stdout.readline().strip() if ready else ""
        if not cls.url.startswith("uart://"):
            cls._stop()
            raise RuntimeError(f"the QEMU board did not start (said {cls.url!r})")
        cls.x = (np.arange(490, dtype=np.float32).reshape(1, 1, 49, 10) % 17) / 17.0

    @classmethod
    def _stop(cls):
        if cls.board.poll() is None:
            cls.board.send_signal(signal.SIGTERM)
            try:
                cls.board.wait(15)
            except subprocess.TimeoutExpired:
                cls.board.kill()
                cls.board.wait()
        cls.board.stdout.close()

    @classmethod
    def tearDownClass(cls):
        cls._stop()

    def session(self):
        for _ in range(50):  # the board may still be finishing a reset of the last session
            try:
                return tether.Session(self.url, timeout_ms=60000, wait_ms=-1)
            except tether.Error:
                time.sleep(0.2)
        return tether.Session(self.url, timeout_ms=60000, wait_ms=-1)

    def test_run_model(self):
        with self.session() as s:
            self.assertTrue(s.info["load_size_bytes"] > 0)
            out = s.run_model(KWS, self.x)
        self.assertEqual(out.compiled["target"], "cortex-m3")
        ref = tether.reference(KWS, self.x)
        (name,) = out.keys()
        np.testing.assert_allclose(out[name], ref[name], rtol=1e-4, atol=1e-5)
        self.assertGreater(out.call.stack_bytes, 0)

    def test_ab(self):
        with self.session() as s:
            r = s.ab(KWS, self.x, repeat=4, min_repeat_ms=0)
        self.assertEqual(r.target, "cortex-m3")
        self.assertEqual(set(r.variants), {"unpacked", "packed"})
        for v in r.variants.values():
            self.assertTrue(v.outputs_equal, v.label)
            self.assertEqual(len(v.seconds), 4)
            self.assertGreater(v.median, 0)
        self.assertIn(r.variants["packed"].ratio["verdict"],
                      ("faster", "slower", "no_significant_difference", "equal_within_1_percent"))


if __name__ == "__main__":
    unittest.main()
