"""Start-up time of the command line: ``dpaudit --version``, ``dpaudit --help`` and a small
command (``bound tight``), each in a fresh process (target: ``--version`` and ``--help`` within
0.2 s).

Each figure is the median wall time and the median CPU time (user + system, ``os.wait4``) of
``--repeat`` runs of ``python -m dpaudit ARGS``; ``python -c pass`` is measured alongside as
the interpreter's own floor.  ``--baseline-src DIR`` (e.g. ``git archive <commit> src`` unpacked)
runs every command a second time with ``PYTHONPATH=DIR``, alternating with the current tree, so
before and after share the same minutes of a shared machine.  CPU time is the steadier figure
on a loaded machine.

    PYTHONPATH=src python benchmarks/cli_startup.py [--repeat 15] [--baseline-src /tmp/base/src]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

COMMANDS = {
    "--version": ["-m", "dpaudit", "--version"],
    "--help": ["-m", "dpaudit", "--help"],
    "bound tight": ["-m", "dpaudit", "bound", "tight", "--canaries", "1000", "--guesses",
                    "100", "--wrong", "10", "--json"],
    "python -c pass": ["-c", "pass"],
}


def _run(argv: list[str], src: str) -> tuple[float, float]:
    env = dict(os.environ, PYTHONPATH=src, COLUMNS="100")
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, *argv], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=env)
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"python {' '.join(argv)} failed (PYTHONPATH={src})")
    return wall, ru.ru_utime + ru.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--baseline-src", default=None)
    args = ap.parse_args()
    here = str(Path(__file__).resolve().parents[1] / "src")
    trees = {"current": here}
    if args.baseline_src:
        trees["baseline"] = args.baseline_src
    times: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for _ in range(args.repeat):
        for name, argv in COMMANDS.items():
            for tree, src in trees.items():
                times.setdefault((name, tree), []).append(_run(argv, src))
    print(f"{'command':<16} {'tree':<9} {'wall s (median)':>16} {'cpu s (median)':>15}"
          + ("   ratio wall / cpu (baseline / current)" if len(trees) > 1 else ""))
    for name in COMMANDS:
        for tree in trees:
            w = statistics.median(t[0] for t in times[(name, tree)])
            c = statistics.median(t[1] for t in times[(name, tree)])
            line = f"{name:<16} {tree:<9} {w:16.3f} {c:15.3f}"
            if tree == "baseline":
                wc = statistics.median(t[0] for t in times[(name, "current")])
                cc = statistics.median(t[1] for t in times[(name, "current")])
                line += f"   {w / wc:.1f}x / {c / cc:.1f}x"
            print(line)


if __name__ == "__main__":
    main()
