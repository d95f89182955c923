"""End-to-end cost of ``dpaudit risk`` for many targets, import included (issue 14 target:
``dpaudit risk --targets 1e7`` under 10 s).

Each command runs in a fresh process (``python -m dpaudit risk ... --json``); the figures are
that process's wall seconds, CPU seconds (user + system) and peak RSS, read with ``os.wait4``.
``--baseline-src DIR`` runs every command a second time with ``PYTHONPATH=DIR`` (e.g. a
``git archive main src`` export) in alternation, so before and after are measured in the same
minutes on a shared machine; the v_UB printed by both must agree.

    PYTHONPATH=src python benchmarks/risk_cli.py [--targets 1e7] [--prior-file]
        [--baseline-src /tmp/base/src]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def _run(args: list[str], src: str | None) -> dict[str, float | int]:
    env = os.environ.copy()
    if src is not None:
        env["PYTHONPATH"] = src
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as errf:
        proc = subprocess.Popen([sys.executable, "-m", "dpaudit", "risk", *args, "--json"],
                                stdout=subprocess.PIPE, stderr=errf, env=env)
        assert proc.stdout is not None
        out = proc.stdout.read()
        _, status, ru = os.wait4(proc.pid, 0)  # this child's own CPU time and peak RSS
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        if proc.returncode:
            errf.seek(0)
            raise SystemExit(f"dpaudit risk {' '.join(args)} failed:\n"
                             f"{errf.read().decode()[-2000:]}")
    d = json.loads(out)
    return {"wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "rss_mb": ru.ru_maxrss / 1024,
            "v_ub": int(d["v_ub"])}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--targets", default="1e7")
    ap.add_argument("--baseline-src", default=None)
    ap.add_argument("--prior-file", action="store_true",
                    help="also n heterogeneous priors U(0.01, 0.3) (seed 0) from a text file "
                         "of one number per line (written to a temporary directory)")
    a = ap.parse_args(argv)
    n = int(float(a.targets))
    cases = {f"--prior 0.1 --targets {a.targets}":
             ["--epsilon", "1", "--delta", "1e-9", "--prior", "0.1", "--targets", str(n)]}
    tmp = tempfile.TemporaryDirectory()
    if a.prior_file:
        import numpy as np

        path = os.path.join(tmp.name, "priors.txt")
        np.savetxt(path, np.random.default_rng(0).uniform(0.01, 0.3, n), fmt="%.17g")
        cases[f"--prior-file ({a.targets} lines)"] = ["--epsilon", "1", "--delta", "1e-9",
                                                     "--prior-file", path]
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    for name, args in cases.items():
        runs = [("after", None)]
        if a.baseline_src:
            runs = [("before", a.baseline_src), ("after", None)]
        for label, src in runs:
            r = _run(args, src)
            print(f"dpaudit risk {name:<28} {label:<6} wall {r['wall']:6.2f} s  "
                  f"cpu {r['cpu']:6.2f} s  peak {r['rss_mb']:6.0f} MB  v_ub {r['v_ub']}",
                  flush=True)
    tmp.cleanup()


if __name__ == "__main__":
    main()
