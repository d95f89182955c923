"""Run every timed benchmark of ``benchmarks/`` with arguments that keep the whole run short
(``make bench``: about 10 minutes on 2 cores).

    PYTHONPATH=src python benchmarks/run_all.py [--only NAME ...] [--list]

Each script runs in its own process, one after the other, with the arguments of
:data:`BENCHMARKS` (each prints its figures as ratios to a baseline measured in the same run);
a script that fails is reported and the others still run; the exit status is 1 if any failed.
The full-size runs are each script's own defaults (see its docstring).  Studies (tightness,
detection, peers, the zoo, ...) are not benchmarks: they live in ``studies/``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

#: script -> the arguments ``make bench`` runs it with (a quick size; a baseline where the
#: script needs one)
BENCHMARKS: dict[str, list[str]] = {
    "one_run_default.py": ["--sizes", "1e4", "1e6", "--repeats", "3"],
    "perf.py": ["--quick", "--only", "audit_one_run n=1e+04", "audit_one_run n=1e+06",
                "guess_counts n=1e+06",
                "guess_counts ties n=1e+06", "tight n=r=1e6", "tight n=1e6 r=1e5",
                "multi_run n=1e6", "lifted int8 2e5x64", "risk thm3.5 1e6 heterogeneous",
                "dpsgd_curve(0.05, 1, 1)"],
    "batch_estimators.py": ["--sizes", "1e4,1e5,1e6", "--reps", "1"],
    "bench_one_run.py": ["--skip-table"],
    "bench_tight.py": [],
    "bench_mechanisms.py": ["--quick"],
    "bench_audit_cli.py": [],
    "bench_risk.py": ["--repeats", "1"],
    "bench_xbern.py": [],
    "cli_startup.py": ["--repeat", "5"],
    "risk_cli.py": ["--targets", "1e6"],
    "validate_once.py": ["--baseline-rev", "05b76d6", "--n", "50000", "--rounds", "1"],
    "trials.py": ["--quick"],
    "report.py": [],
    "audit_statistics.py": ["--canaries", "1000", "--repeats", "1"],
    "training_overhead.py": ["--steps", "20", "--repeats", "1", "--models", "digits_mlp"],
    "placement_device.py": ["--device", "cpu", "--width", "256", "--examples", "512",
                            "--repeats", "1"],
    "lm.py": ["overhead", "--canaries", "1000", "--steps", "10", "--pretrain-steps", "20",
              "--repeats", "1"],
}


def scripts() -> list[str]:
    """Every benchmark script of this folder (all but this runner and the ``_`` helpers)."""
    return sorted(p.name for p in HERE.glob("*.py")
                  if p.name != Path(__file__).name and not p.name.startswith("_"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", help="script names (default: all)")
    ap.add_argument("--list", action="store_true", help="print the commands and stop")
    args = ap.parse_args(argv)
    missing = sorted(set(scripts()) - set(BENCHMARKS))
    if missing:
        print(f"warning: benchmarks without a make-bench entry (run with no arguments): "
              f"{', '.join(missing)}")
    names = args.only or [*BENCHMARKS, *missing]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT / "src"), *filter(None, [env.get("PYTHONPATH")])])
    failed: list[str] = []
    times: dict[str, float] = {}
    start = time.perf_counter()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs", flush=True)
    for name in names:
        cmd = [sys.executable, str(HERE / name), *BENCHMARKS.get(name, [])]
        print(f"\n== benchmarks/{name} {' '.join(BENCHMARKS.get(name, []))}", flush=True)
        if args.list:
            continue
        t0 = time.perf_counter()
        rc = subprocess.run(cmd, env=env, cwd=ROOT, check=False).returncode
        times[name] = time.perf_counter() - t0
        if rc:
            failed.append(name)
            print(f"!! benchmarks/{name} exited with status {rc}", flush=True)
    if args.list:
        return 0
    print(f"\n{len(times)} benchmarks in {time.perf_counter() - start:.0f} s (wall); load "
          f"average now {os.getloadavg()[0]:.1f}")
    for name, t in times.items():
        print(f"  {t:7.1f} s  {name}{'  FAILED' if name in failed else ''}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
