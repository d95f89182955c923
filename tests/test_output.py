"""dpaudit.output: outputs go only onto regular files or new paths, atomically.

A device, FIFO, socket or directory (also behind a symbolic link) is refused with one error
before any work, by every writer: audit cards (HTML, PNG), ``report --out``, ``bound lifted
--report``, ``--save-scores``, the zoo's Markdown, store exports, the experiments' CSV/PNG.
Devices are made with ``mknod`` in a temporary directory where the test may (root); otherwise
a FIFO stands in for them, so the test never touches the machine's own devices."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import numpy as np
import pytest

from dpaudit.output import atomic_output, check_output_target, write_text


def _device(tmp_path: Path) -> Path:
    """A character device equal to /dev/null (major 1, minor 3) when mknod is permitted,
    else a FIFO: either way a file no writer may replace."""
    p = tmp_path / "mynull"
    try:
        os.mknod(p, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except (PermissionError, OSError):
        os.mkfifo(p)
    return p


def _special(tmp_path: Path, kind: str) -> Path:
    if kind == "device":
        return _device(tmp_path)
    p = tmp_path / f"special-{kind}"
    if kind == "fifo":
        os.mkfifo(p)
    elif kind == "directory":
        p.mkdir()
    elif kind == "socket":
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(p))
        s.close()
    elif kind == "link-to-fifo":
        os.mkfifo(tmp_path / "fifo-target")
        p.symlink_to(tmp_path / "fifo-target")
    elif kind == "link-to-directory":
        p.symlink_to(tmp_path)
    elif kind == "dangling-link":
        p.symlink_to(tmp_path / "nowhere")
    return p


KINDS = ("device", "fifo", "directory", "socket", "link-to-fifo", "link-to-directory",
         "dangling-link")


def _unchanged(p: Path, before: os.stat_result) -> None:
    after = os.lstat(p)
    assert stat.S_IFMT(after.st_mode) == stat.S_IFMT(before.st_mode)
    assert after.st_ino == before.st_ino


@pytest.mark.parametrize("kind", KINDS)
def test_check_refuses_non_regular_targets(tmp_path, kind) -> None:
    p = _special(tmp_path, kind)
    before = os.lstat(p)
    with pytest.raises(ValueError, match="choose another output path") as e:
        check_output_target(p, what="--report")
    assert str(p) in str(e.value) and "--report" in str(e.value)
    with pytest.raises(ValueError, match="choose another output path"):
        write_text(p, "x")
    _unchanged(p, before)
    assert [f for f in os.listdir(tmp_path) if f.endswith(".tmp")] == []


def test_check_names_the_kind(tmp_path) -> None:
    os.mkfifo(tmp_path / "f")
    with pytest.raises(ValueError, match="is a FIFO"):
        check_output_target(tmp_path / "f")
    with pytest.raises(ValueError, match="is a directory"):
        check_output_target(tmp_path)
    with pytest.raises(ValueError, match="is not a directory"):
        (tmp_path / "file").write_text("x")
        check_output_target(tmp_path / "file" / "out.html")
    with pytest.raises(ValueError, match="is the input"):
        check_output_target(tmp_path / "file", tmp_path / "file")


def test_new_and_regular_targets_are_written_atomically(tmp_path) -> None:
    new = tmp_path / "sub" / "new.md"
    assert write_text(new, "one") == new and new.read_text() == "one"
    mode = stat.S_IMODE(os.stat(new).st_mode)
    mask = os.umask(0o022)
    os.umask(mask)
    assert mode == 0o666 & ~mask  # not the 0600 of a temporary file
    os.chmod(new, 0o640)
    write_text(new, "two")
    assert new.read_text() == "two" and stat.S_IMODE(os.stat(new).st_mode) == 0o640
    # a failing writer leaves the old content and no temporary file
    with pytest.raises(RuntimeError), atomic_output(new) as tmp:
        tmp.write_text("half")
        raise RuntimeError("writer failed")
    assert new.read_text() == "two"
    assert sorted(os.listdir(new.parent)) == ["new.md"]


def test_symlink_to_regular_file_is_written_through(tmp_path) -> None:
    real = tmp_path / "real.html"
    real.write_text("old")
    link = tmp_path / "link.html"
    link.symlink_to(real)
    write_text(link, "new")
    assert link.is_symlink() and real.read_text() == "new"


# ------------------------------------------------------------------ every writer
def _scores(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    m = np.arange(200) % 2
    s = rng.normal(size=200) + m
    p = tmp_path / "v.csv"
    p.write_text("member,score\n" + "".join(f"{a},{b:.6f}\n" for a, b in zip(m, s, strict=True)))
    return p


def _one_error(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    return lines[0]


@pytest.mark.parametrize("argv", [
    ("audit", "{scores}", "--report", "{dev}"),
    ("one-run", "{scores}", "--format", "png", "--report", "{dev}"),
    ("report", "{saved}", "--out", "{dev}"),
    ("bound", "lifted", "{lifted}", "--report", "{dev}"),
    ("zoo", "--only", "reference", "--out", "{dev}"),
    ("train-audit", "--canaries", "10", "--save-scores", "{dev}"),
    ("demo", "--report", "{dev}"),
    ("store", "export", "{store}", "{dev}"),
])
def test_cli_writers_refuse_a_device(tmp_path, cli, argv) -> None:
    dev = _device(tmp_path)
    before = os.lstat(dev)
    scores = _scores(tmp_path)
    saved = tmp_path / "saved.json"
    saved.write_text('{"results": [{"epsilon": 0.5, "delta": 1e-05, "confidence": 0.95, '
                     '"method": "multi_run"}]}')
    lifted = tmp_path / "l.npz"
    rng = np.random.default_rng(0)
    np.savez(lifted, x=rng.integers(0, 2, (50, 4)), y=rng.integers(0, 2, (50, 4)))
    store = tmp_path / "s.sqlite"
    store.write_bytes(b"")  # refused before the store is opened
    sub = {"{scores}": scores, "{saved}": saved, "{lifted}": lifted, "{dev}": dev,
           "{store}": store}
    rc, _, err = cli(*(str(sub.get(a, a)) for a in argv))
    assert rc == 2
    assert "choose another output path" in _one_error(err) and str(dev) in err
    _unchanged(dev, before)


def test_library_writers_refuse_a_device(tmp_path) -> None:
    from dpaudit.io import write_scores
    from dpaudit.report import write_report

    dev = _device(tmp_path)
    before = os.lstat(dev)
    payload = {"results": [{"epsilon": 0.5, "delta": 1e-5, "confidence": 0.95,
                            "method": "multi_run"}]}
    for call in (lambda: write_scores(dev, [0, 1], [0.1, 0.2]),
                 lambda: write_report(dev, payload),
                 lambda: write_report(dev, payload, fmt="png")):
        with pytest.raises(ValueError, match="choose another output path"):
            call()
    _unchanged(dev, before)


@pytest.mark.slow
def test_store_export_refuses_a_fifo(tmp_path) -> None:
    pytest.importorskip("pyarrow")
    from dpaudit.engine import execute
    from dpaudit.engine.store import TrialStore
    from dpaudit.games.examples import gaussian_count_audit

    s = tmp_path / "s.sqlite"
    execute(gaussian_count_audit(), trials=10, seed=0, executor="inline", store=s)
    fifo = tmp_path / "out.parquet"
    os.mkfifo(fifo)
    with TrialStore(s, readonly=True) as st:
        with pytest.raises(ValueError, match="FIFO"):
            st.to_parquet(fifo)
        out = st.to_parquet(tmp_path / "ok.parquet")
    assert out.stat().st_size > 0 and stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_write_scores_round_trip(tmp_path) -> None:
    from dpaudit.io import load_scores, write_scores

    p = tmp_path / "s.csv"
    write_scores(p, [0, 1, 1], [0.1, 1 / 3, -2.5])
    obs = load_scores(p)
    assert obs.score.tolist() == [0.1, 1 / 3, -2.5] and obs.member.tolist() == [0, 1, 1]


@pytest.mark.slow  # imports matplotlib
def test_experiment_writers_refuse_a_fifo(tmp_path) -> None:
    """The experiments' CSV and figure helpers (every runner writes through them)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from dpaudit.papers.experiments.plotting import save_figure, write_csv

    fifo = tmp_path / "fig.png"
    os.mkfifo(fifo)
    fig = plt.figure()
    try:
        with pytest.raises(ValueError, match="FIFO"):
            save_figure(fig, fifo)
        with pytest.raises(ValueError, match="FIFO"):
            write_csv(fifo, [{"a": 1}])
        png = save_figure(fig, tmp_path / "ok.png")
    finally:
        plt.close(fig)
    assert png.read_bytes()[:4] == b"\x89PNG" and stat.S_ISFIFO(os.lstat(fifo).st_mode)
