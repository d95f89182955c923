"""Property-based fuzz of the whole command line: every command in ``dpaudit.cli.COMMANDS``
(each ``bound`` / ``store`` sub-command too), with options drawn from the command's own and
values drawn from hostile pools (NaN, +-inf, 1e400, 1e-320, huge integers, text, empty
strings, special files), exits 0 or 2 and never prints a traceback.  A new command is fuzzed
automatically, so it cannot ship a traceback.

The commands that train, run the zoo or reproduce figures (``HEAVY``) get only values that must
be refused, so an example stays cheap; a command still running after ``BUDGET_S`` seconds is
stopped (for a heavy command that is a failure: a bad value was not refused up front).
Bounded and deterministic: ``derandomize=True``, ``max_examples`` below.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

#: commands whose valid runs take minutes: fuzzed with values that must be refused only
HEAVY = ("demo", "train-audit", "zoo", "reproduce", "run")
#: per-example wall-clock budget (seconds)
BUDGET_S = 60  # the first train-audit example imports torch (~17 s on a loaded machine)
NUMBERS = ("0", "1", "-1", "0.5", "2", "3", "nan", "inf", "-inf", "1e400", "1e-320", "abc",
           "", "100000000000000000000", "0.999999")
INVALID = ("nan", "inf", "-inf", "1e400", "abc", "", "-1e400", "0x1p3")
PATH_OPTIONS = ("--report", "--out", "--save-scores", "--store", "--store-dir", "--scores",
                "--prior-file")
POSITIONAL = {
    "audit": ("FILE:good", "FILE:dup", "FILE:bigint", "FILE:huge", "FILE:dir"),
    "one-run": ("FILE:good", "FILE:dup", "FILE:bigint", "FILE:huge", "FILE:strings"),
    "curve": ("gdp", "laplace", "eps_delta", "subsampled_gaussian", "dpsgd", "bogus"),
    "report": ("FILE:result", "FILE:good", "FILE:fifo"),
    "reproduce": ("bogus", "list"),
    "run": ("nosuchmodule:AUDIT", "", ":", "os:path", "FILE:good"),
    "simulate": ("gaussian", "laplace", "rr", "subsampled_gaussian", "dpsgd", "bogus"),
    ("bound", "lifted"): ("FILE:lifted", "FILE:good"),
    ("store", "info"): ("FILE:good", "FILE:dir", "FILE:fifo"),
    ("store", "export"): ("FILE:good", "FILE:dir"),
}
#: options a command requires (given first; a drawn value for the same option comes later
#: and wins), so that examples reach the computation
REQUIRED = {
    ("bound", "tight"): ("--canaries", "1000", "--guesses", "100", "--wrong", "10"),
    ("bound", "bits"): ("--canaries", "1000", "--wrong", "300"),
    ("bound", "steinke"): ("--canaries", "1000", "--guesses", "200", "--correct", "180"),
    ("bound", "mahloujifar"): ("--canaries", "1000", "--guesses", "200", "--correct", "180"),
    "risk": ("--epsilon", "2", "--prior", "0.01"),
}


def _leaves() -> list[tuple[tuple[str, ...], list[tuple[str, bool]], int]]:
    """(command path, [(option, is_flag)], number of positional arguments) of every command."""
    import typer.main

    from dpaudit.cli import COMMANDS, load_commands
    from dpaudit.cli.app import app

    load_commands()
    root = typer.main.get_command(app)
    out = []
    for name in COMMANDS:
        cmd = root.get_command(None, name)
        subs = getattr(cmd, "commands", None) or {None: cmd}
        for sub, c in subs.items():
            path = (name,) if sub is None else (name, sub)
            opts = [(p.opts[0], bool(getattr(p, "is_flag", False))) for p in c.params
                    if p.param_type_name == "option"]
            npos = sum(p.param_type_name == "argument" for p in c.params)
            out.append((path, opts, npos))
    return out


LEAVES = _leaves()


def test_every_command_is_fuzzed() -> None:
    from dpaudit.cli import COMMANDS

    assert {p[0] for p, _, _ in LEAVES} == set(COMMANDS)
    assert len(LEAVES) > len(COMMANDS)  # the bound and store sub-commands too


@st.composite
def argvs(draw: Any) -> list[str]:
    path, opts, npos = draw(st.sampled_from(LEAVES))
    heavy = path[0] in HEAVY
    key = path if len(path) > 1 else path[0]
    pos = POSITIONAL.get(key, ("FILE:good",))
    argv = list(path) + [draw(st.sampled_from(pos)) for _ in range(npos)]
    argv += REQUIRED.get(key, ())
    usable = [(o, f) for o, f in opts if not (heavy and f)]
    chosen = draw(st.lists(st.sampled_from(usable), min_size=1 if heavy else 0, max_size=3,
                           unique=True)) if usable else []
    for opt, flag in chosen:
        if flag:
            argv.append(opt)
        elif opt in PATH_OPTIONS:
            argv += [opt, draw(st.sampled_from(("FILE:fifo", "FILE:dir", "FILE:good")
                                               if heavy else ("FILE:fifo", "FILE:dir",
                                                              "FILE:newout", "FILE:good")))]
        else:
            argv += [opt, draw(st.sampled_from(INVALID if heavy else NUMBERS))]
    return argv


class _Budget(BaseException):
    """Raised by the alarm when an example runs past BUDGET_S."""


def _files(tmp: Path) -> dict[str, str]:
    rng = np.random.default_rng(0)
    m = np.arange(200) % 2
    s = rng.normal(size=200) + m
    good = tmp / "good.csv"
    good.write_text("member,score\n" + "".join(f"{a},{b:.6f}\n" for a, b in zip(m, s,
                                                                                strict=True)))
    dup = tmp / "dup.csv"
    dup.write_text(good.read_text() + good.read_text().split("\n", 1)[1])
    (tmp / "bigint.json").write_text('{"member": [0, 1, 0, 1], "score": [1, 2, 3, 1'
                                     + "0" * 400 + "]}")
    (tmp / "huge.csv").write_text("member,score\n" + "".join(
        f"{i % 2},{(1 if i % 3 else -1) * 1.7e308:.17g}\n" for i in range(60)))
    (tmp / "strings.json").write_text('{"member": [0, 1], "score": ["0.5", "0.7"]}')
    (tmp / "result.json").write_text(json.dumps({"results": [{
        "method": "tight", "epsilon": 1.0, "delta": 1e-5, "confidence": 0.95}]}))
    np.savez(tmp / "lifted.npz", x=rng.integers(0, 2, (40, 4)), y=rng.integers(0, 2, (40, 4)))
    os.mkfifo(tmp / "fifo")
    (tmp / "d").mkdir()
    names = {"good": good, "dup": dup, "bigint": tmp / "bigint.json", "huge": tmp / "huge.csv",
             "strings": tmp / "strings.json", "result": tmp / "result.json",
             "lifted": tmp / "lifted.npz", "fifo": tmp / "fifo", "dir": tmp / "d",
             "newout": tmp / "new" / "out.html"}
    return {k: str(v) for k, v in names.items()}


@pytest.mark.slow  # ~80 examples end to end (seconds each at most)
def test_cli_fuzz_exits_0_or_2_without_traceback(tmp_path_factory, capsys) -> None:
    from dpaudit.cli import main

    files = _files(tmp_path_factory.mktemp("fuzz"))

    def on_alarm(signum: int, frame: Any) -> None:
        raise _Budget

    @settings(max_examples=80, derandomize=True, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(argvs())
    def check(argv: list[str]) -> None:
        args = [files[a[5:]] if a.startswith("FILE:") else a for a in argv]
        old = signal.signal(signal.SIGALRM, on_alarm)
        signal.alarm(BUDGET_S)
        try:
            rc = main(args)
        except _Budget:
            assert argv[0] not in HEAVY, f"{argv}: ran past {BUDGET_S} s on a bad value"
            capsys.readouterr()
            return
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)
        err = capsys.readouterr().err
        assert rc in (0, 2), (argv, rc, err[-500:])
        assert "Traceback" not in err, (argv, err[-800:])
        if rc == 2:
            lines = [ln for ln in err.splitlines() if ln.strip()]
            assert lines and lines[-1].startswith("error: "), (argv, err[-500:])

    check()
