"""An interpreter that exits while daemon threads are inside Weft (running, compiling, waiting
to take the GIL back) exits cleanly: such threads are parked, not unwound (which aborted the
process with "terminate called without an active exception", or crashed running Python
destructors without the GIL)."""
import os
import subprocess
import sys

import pytest

SCRIPT = r"""
import threading, time, sys
import numpy as np
import weft

mode = sys.argv[1]
s = weft.Session(use_env_path=False)
g = weft.Graph("g")
dim = -1 if mode == "dynamic" else 192
g.add_input("x", "float32", [dim, 192]).add_node("MatMul", "m", ["x", "x2"], ["y"])
g.add_input("x2", "float32", [192, 192]).add_output("y")
m = s.compile(g)
x = np.random.rand(192, 192).astype(np.float32)
out = np.empty((192, 192), np.float32)

def work():
    while True:
        if mode == "run_into":
            m.run_into([x, x], [out])
        elif mode == "compile":
            s.compile(g)
        else:
            m.run([x, x])

for _ in range(4):
    threading.Thread(target=work, daemon=True).start()
time.sleep(0.2)
print("exiting", flush=True)
"""


@pytest.mark.parametrize("mode", ["static", "dynamic", "run_into", "compile"])
def test_exit_while_daemon_threads_are_inside_weft(mode):
    for attempt in range(6):  # the abort came on about half the exits
        r = subprocess.run([sys.executable, "-c", SCRIPT, mode], capture_output=True, text=True, env=dict(os.environ),
                           timeout=600)
        assert r.returncode == 0 and r.stdout.strip() == "exiting", (attempt, r.returncode, r.stderr[-2000:])
        assert "terminate called" not in r.stderr and "FATAL" not in r.stderr, r.stderr[-2000:]


DEL_SCRIPT = r"""
import numpy as np
import weft

g = weft.Graph("g")
g.add_input("x", "float32", [64, 64]).add_input("x2", "float32", [64, 64])
g.add_node("MatMul", "m", ["x", "x2"], ["y"]).add_output("y")
s = weft.Session(use_env_path=False)
m = s.compile(g)
x = np.ones((64, 64), np.float32)


class Finalizer:
    def __del__(self):
        y = m.run([x, x])[0]
        s.compile(g)
        print("finalizer ran", float(y[0, 0]), flush=True)


keep = Finalizer()
print("exiting", flush=True)
"""


def test_the_main_thread_runs_models_while_the_interpreter_finalizes():
    """Work in a __del__ that runs during shutdown (on the main thread) still runs: only other
    threads are kept out of the engine once the interpreter exits."""
    for attempt in range(3):
        r = subprocess.run([sys.executable, "-c", DEL_SCRIPT], capture_output=True, text=True, env=dict(os.environ), timeout=600)
        assert r.returncode == 0, (attempt, r.returncode, r.stderr[-2000:])
        assert r.stdout.split() == ["exiting", "finalizer", "ran", "64.0"], r.stdout
