"""Reading score files (issue 15): every malformed file is one clear ValueError, spreadsheets'
CSV (BOM, quoted numbers, ';') is accepted, and large or special files are refused."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from dpaudit.cli import main
from dpaudit.io import load_lifted, load_scores
from dpaudit.risk.priors import load_priors

MEMBER = np.array([1, 0, 1, 0, 1, 0])
SCORE = np.array([0.9, 0.1, 0.8, 0.3, 0.7, 0.2])


def _same(obs):
    assert obs.member.tolist() == MEMBER.astype(bool).tolist()
    assert obs.score.tolist() == SCORE.tolist()


def _csv(tmp_path, text, name="s.csv", encoding="utf-8"):
    p = tmp_path / name
    p.write_bytes(text.encode(encoding))
    return p


def test_csv_with_bom_quotes_and_semicolons(tmp_path):
    rows = "\n".join(f"{m},{s}" for m, s in zip(MEMBER, SCORE, strict=True))
    _same(load_scores(_csv(tmp_path, "member,score\n" + rows + "\n", encoding="utf-8-sig")))
    quoted = "\n".join(f'"{m}","{s}"' for m, s in zip(MEMBER, SCORE, strict=True))
    _same(load_scores(_csv(tmp_path, '"member","score"\r\n' + quoted.replace("\n", "\r\n"))))
    semi = "\n".join(f"{m};{s}" for m, s in zip(MEMBER, SCORE, strict=True))
    _same(load_scores(_csv(tmp_path, "\ufeffMember;Score\n" + semi + "\n")))


def _write_npz(tmp_path):
    p = tmp_path / "s.npz"
    np.savez(p, member=MEMBER, score=SCORE)
    return p


def test_npz_roundtrip(tmp_path):
    _same(load_scores(_write_npz(tmp_path)))


@pytest.mark.parametrize("case,needle", [
    ("truncated_npz", "not a readable .npz"),
    ("random_npz", "not a .npz file"),
    ("csv_as_npz", "not a .npz file"),
    ("pickle_npz", "pickles"),
    ("nested_json", "nested too deeply"),
    ("binary_csv", "not UTF-8"),
    ("string_scores_json", "scores in .npz, JSON and Parquet files must be numbers"),
    ("complex_scores_npz", "complex"),
    ("directory", "directory"),
    ("missing", "not found"),
])
def test_malformed_files_give_one_error(tmp_path, case, needle):
    if case == "truncated_npz":
        full = _write_npz(tmp_path).read_bytes()
        p = tmp_path / "t.npz"
        p.write_bytes(full[: len(full) // 2])
    elif case == "random_npz":
        p = tmp_path / "r.npz"
        p.write_bytes(np.random.default_rng(0).bytes(4096))
    elif case == "csv_as_npz":
        p = _csv(tmp_path, "member,score\n1,0.5\n", name="c.npz")
    elif case == "pickle_npz":
        p = tmp_path / "p.npz"
        np.savez(p, member=np.array([1, 0], dtype=object), score=np.array([0.1, 0.2]))
    elif case == "nested_json":
        p = _csv(tmp_path, "[" * 100_000 + "]" * 100_000, name="n.json")
    elif case == "binary_csv":
        p = tmp_path / "b.csv"
        p.write_bytes(b"member,score\n" + bytes(range(128, 256)))
    elif case == "string_scores_json":
        p = _csv(tmp_path, json.dumps({"member": [1, 0], "score": ["0.5", "0.1"]}),
                 name="s.json")
    elif case == "complex_scores_npz":
        p = tmp_path / "c.npz"
        np.savez(p, member=np.array([1, 0]), score=np.array([1 + 2j, 0.5]))
    elif case == "directory":
        p = tmp_path
    else:
        p = tmp_path / "nope.csv"
    with pytest.raises(ValueError, match=needle.replace("(", r"\(")):
        load_scores(p)
    rc = main(["audit", str(p)])
    assert rc == 2


def test_special_and_huge_files_are_refused(tmp_path, monkeypatch):
    if os.path.exists("/dev/zero"):
        with pytest.raises(ValueError, match="regular file"):
            load_scores("/dev/zero")
    p = _csv(tmp_path, "member,score\n" + "1,0.5\n" * 1000)
    monkeypatch.setenv("DPAUDIT_MAX_FILE_BYTES", "1000")
    with pytest.raises(ValueError, match=r"6,013 bytes, above the limit of 1,000"):
        load_scores(p)
    with pytest.raises(ValueError, match="above the limit"):
        load_priors(p)


def test_lifted_npz_and_its_errors(tmp_path):
    p = tmp_path / "xy.npz"
    np.savez(p, x=np.ones((4, 2), int), y=np.zeros((4, 2), int))
    obs = load_lifted(p)
    assert obs.x.shape == (4, 2) and obs.x.all() and not obs.y.any()
    q = tmp_path / "bad.npz"
    q.write_bytes(b"member,score\n")
    with pytest.raises(ValueError, match="not a .npz file"):
        load_lifted(q)
    np.savez(q, x=np.ones((4, 2)))
    with pytest.raises(ValueError, match="missing y"):
        load_lifted(q)


def test_priors_file_with_bom_and_quotes(tmp_path):
    p = _csv(tmp_path, '\ufeffprior\n"0.1"\n"0.25"\n')
    assert load_priors(p, column="prior").tolist() == [0.1, 0.25]
