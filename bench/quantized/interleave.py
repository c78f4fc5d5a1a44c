"""Interleaved timing shared by the quantized benchmarks: each callable in turn, a batch of `iters`
timed calls after a 50 ms pause (both runtimes leave worker threads spinning after a run) and one
untimed call; the figure is the median of the batch medians, in milliseconds."""
import statistics
import time


def interleaved_ms(runs, rounds, iters):
    """runs: {name: callable}; returns {name: milliseconds}."""
    med = {k: [] for k in runs}
    for _ in range(rounds):
        for k, f in runs.items():
            time.sleep(0.05)
            f()
            t = []
            for _ in range(iters):
                t0 = time.perf_counter()
                f()
                t.append(time.perf_counter() - t0)
            med[k].append(statistics.median(t))
    return {k: 1e3 * statistics.median(v) for k, v in med.items()}
