"""Hostile files and outputs: an output never replaces an input; zip bombs, lying .npy headers,
NUL-byte CSVs, nested Parquet columns, repeated names and boolean scores are refused with one
clear error before memory is spent; sign-inverted scores and privacy_meter's pooled file are
warned about."""

from __future__ import annotations

import io
import json
import warnings
import zipfile

import numpy as np
import pytest

from dpaudit.io import load_scores, read_npz, score_direction_warning
from needs import need


def _one_error(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


def _scores(tmp_path, name="v.csv", n=400, shift=1.0):
    rng = np.random.default_rng(0)
    m = np.arange(n) % 2
    s = rng.normal(size=n) + shift * m
    p = tmp_path / name
    p.write_text("member,score\n" + "".join(f"{a},{b:.6f}\n" for a, b in zip(m, s, strict=True)))
    return p


# ------------------------------------------------------------------ outputs never replace inputs
def test_audit_report_over_its_scores_refused(tmp_path, capsys) -> None:
    from dpaudit.cli import main

    v = _scores(tmp_path)
    before = v.read_bytes()
    assert main(["audit", str(v), "--report", str(v)]) == 2
    err = _one_error(capsys)
    assert "report" in err and str(v) in err and "refusing to overwrite an input" in err
    assert v.read_bytes() == before


def test_report_over_saved_result_refused(tmp_path, capsys) -> None:
    from dpaudit.cli import main

    v = _scores(tmp_path)
    assert main(["audit", str(v), "--json"]) == 0
    saved = tmp_path / "saved.html"  # a --json result saved under an .html name
    saved.write_text(capsys.readouterr().out)
    before = saved.read_bytes()
    assert main(["report", str(saved)]) == 2  # default output: RESULT with .html
    assert "is the input" in _one_error(capsys)
    assert saved.read_bytes() == before
    assert main(["report", str(saved), "--scores", str(v), "--out", str(v)]) == 2
    assert "is the input" in _one_error(capsys)


def test_store_export_over_the_store_refused(tmp_path, capsys) -> None:
    from dpaudit.cli import main
    from dpaudit.engine import execute
    from dpaudit.games.examples import gaussian_count_audit

    s = tmp_path / "s.sqlite"
    execute(gaussian_count_audit(), trials=20, seed=0, executor="inline", store=s)
    before = s.read_bytes()
    assert main(["store", "export", str(s), str(s)]) == 2
    err = _one_error(capsys)
    assert "export" in err and err.count(str(s)) == 2
    assert s.read_bytes() == before


# --------------------------------------------------------------------------------- npz files
def _npz_with_lying_header(path, n_claimed: int) -> None:
    head = {"descr": "<f8", "fortran_order": False, "shape": (n_claimed,)}
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, head)
    buf.write(np.zeros(4).tobytes())
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("member.npy", _npy(np.array([0, 1, 0, 1])))
        z.writestr("score.npy", buf.getvalue())


def _npy(a) -> bytes:
    b = io.BytesIO()
    np.save(b, a)
    return b.getvalue()


def test_npz_header_claiming_1e12_elements(tmp_path, capsys) -> None:
    from dpaudit.cli import main

    p = tmp_path / "lie.npz"
    _npz_with_lying_header(p, 10**12)
    with pytest.raises(ValueError, match=r"declares shape \(1000000000000,\)"):
        load_scores(p)
    assert main(["one-run", str(p)]) == 2
    assert "declares shape" in _one_error(capsys)


@pytest.mark.slow
def test_zip_bomb_npz_checked_from_the_directory(tmp_path, monkeypatch, capsys) -> None:
    from dpaudit.cli import main

    monkeypatch.setenv("DPAUDIT_MAX_FILE_BYTES", str(1 << 20))
    p = tmp_path / "bomb.npz"
    np.savez_compressed(p, member=np.arange(4) % 2, score=np.zeros(4 << 20))  # 32 MiB of zeros
    assert p.stat().st_size < 1 << 20  # passes the file-size check: the bomb is inside
    with pytest.raises(ValueError, match="inflates to 33,554,560 bytes"):
        load_scores(p)
    assert main(["audit", str(p), "--member-col", "member", "--score-col", "score"]) == 2
    assert "inflates to" in _one_error(capsys)
    # only the needed arrays are inflated: a bomb in another array is never read
    q = tmp_path / "extra.npz"
    np.savez_compressed(q, member=np.arange(40) % 2, score=np.arange(40.0),
                        junk=np.zeros(4 << 20))
    arrays, names = read_npz(q, "scores file", ("member", "score"))
    assert set(arrays) == {"member", "score"} and "junk" in names
    assert load_scores(q).n == 40


# ---------------------------------------------------------------------------- text and tables
def test_nul_csv_refused_without_slurping(tmp_path, capsys) -> None:
    from dpaudit.cli import main

    p = tmp_path / "nul.csv"
    with p.open("wb") as fh:
        fh.write(b"member,score\n")
        fh.write(b"\x00" * (40 << 20))  # 40 MB of NUL bytes
    import tracemalloc

    tracemalloc.start()
    with pytest.raises(ValueError, match="NUL byte at offset 13"):
        load_scores(p)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 20 << 20  # one 16 MiB block at a time, not the file (before: 6 x the file)
    assert main(["one-run", str(p)]) == 2
    assert "NUL byte" in _one_error(capsys)
    assert main(["risk", "--epsilon", "1", "--prior-file", str(p)]) == 2
    assert "NUL byte" in _one_error(capsys)


def test_parquet_struct_score_column(tmp_path, capsys) -> None:
    pa = need("pyarrow")
    import pyarrow.parquet as pq

    from dpaudit.cli import main

    p = tmp_path / "s.parquet"
    pq.write_table(pa.table({"member": [0, 1], "score": [{"a": 1.0}, {"a": 2.0}]}), p)
    assert main(["audit", str(p)]) == 2
    assert "nested type" in _one_error(capsys)


@pytest.mark.parametrize("name,text,needle", [
    ("dup.csv", "member,score,score\n1,0.5,0.1\n0,0.2,0.3\n", "column 'score' appears twice"),
    ("dup.json", '{"member": [1, 0], "score": [0.1, 0.2], "score": [5, 6]}',
     "key 'score' appears twice"),
    ("bool.json", '{"member": [1, 0], "score": [true, false]}', "'score' holds booleans"),
    ("boolrec.json", '[{"member": 1, "score": 0.5}, {"member": 0, "score": false}]',
     "'score' holds booleans"),
])
def test_ambiguous_files_refused(tmp_path, capsys, name, text, needle) -> None:
    from dpaudit.cli import main

    p = tmp_path / name
    p.write_text(text)
    with pytest.raises(ValueError, match=needle):
        load_scores(p)
    assert main(["audit", str(p)]) == 2
    assert needle in _one_error(capsys)


def test_boolean_npz_scores_and_table_columns(tmp_path) -> None:
    from dpaudit.adapters.tables import read_table

    p = tmp_path / "b.npz"
    np.savez(p, member=np.array([1, 0]), score=np.array([True, False]))
    with pytest.raises(ValueError, match="'score' holds booleans"):
        load_scores(p)
    with pytest.raises(ValueError, match="holds booleans"):
        read_table(p, member_col="member", score_col="score")


# ------------------------------------------------------------------------- direction warnings
def test_sign_inverted_scores_warned(tmp_path, capsys) -> None:
    from dpaudit.cli import main

    inv = _scores(tmp_path, "inv.csv", n=2000, shift=-1.0)
    assert main(["one-run", str(inv), "--json"]) == 0
    cap = capsys.readouterr()
    lines = cap.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("warning: ")
    assert "rank non-members above members" in lines[0] and "negate them" in lines[0]
    json.loads(cap.out)  # stdout stays JSON
    # oriented scores and null scores: no warning (z > -3)
    assert main(["one-run", str(_scores(tmp_path, "ok.csv", n=2000)), "--json"]) == 0
    assert "warning" not in capsys.readouterr().err
    rng = np.random.default_rng(1)
    nulls = [score_direction_warning(np.arange(1000) % 2, rng.normal(size=1000), "x")
             for _ in range(200)]
    assert sum(w is not None for w in nulls) <= 2  # about 1 in 700 under the null


def test_privacy_meter_files(tmp_path) -> None:
    from dpaudit.adapters.tools import from_privacy_meter
    from dpaudit.stats.attack_metrics import auroc

    rng = np.random.default_rng(0)
    m = np.arange(1000) % 2
    loss = rng.exponential(size=1000) * (1 - 0.5 * m)  # members have lower loss
    scores = -loss[None, :] * -1  # privacy_meter's LOSS signal: higher for non-members
    p = tmp_path / "attack_result_0.npz"
    np.savez(p, scores=scores, memberships=m[None, :].astype(bool),
             auc=auroc(m, scores.ravel()))
    with pytest.warns(UserWarning, match="rank non-members above members"):
        from_privacy_meter(p)
    avg = tmp_path / "attack_result_average.npz"
    np.savez(avg, scores=-scores, memberships=m.astype(bool))
    with pytest.warns(UserWarning, match="pools the scores of several target models"):
        from_privacy_meter(avg)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ok = tmp_path / "attack_result_1.npz"
        np.savez(ok, scores=-scores, memberships=m.astype(bool))
        assert from_privacy_meter(ok).n == 1000


# --------------------------------------------------------------------------------- numbers
def test_confidence_below_half_refused_and_tiny_claims_computed(capsys) -> None:
    import dpaudit.estimators as E
    from dpaudit.cli import main

    # the library keeps (0, 1): v_UB at confidence 0.05 is a quantile statement of seed 003
    assert E.tight(n=1000, r=100, u=10, confidence=0.4).confidence == 0.4
    base = ["bound", "tight", "--canaries", "1000", "--guesses", "100", "--wrong", "10",
            "--json"]
    assert main([*base, "--confidence", "1e-320"]) == 2
    assert "[0.5, 1)" in _one_error(capsys)
    assert main([*base, "--confidence=0.3"]) == 2
    assert "--confidence must be in [0.5, 1)" in _one_error(capsys)
    # a claim of 1e-320 is a valid (nearly pure) claim: the same verdict as a claim of 0
    docs = []
    for claim in ("1e-320", "0"):
        assert main([*base, "--claimed-epsilon", claim]) == 0
        docs.append(json.loads(capsys.readouterr().out))
    assert docs[0]["violation"] is docs[1]["violation"] is True
    assert docs[0]["results"][0]["epsilon"] == docs[1]["results"][0]["epsilon"]


def test_risk_targets_that_do_not_fit(capsys) -> None:
    from dpaudit.cli import main

    assert main(["risk", "--epsilon", "1", "--prior", "0.5", "--targets",
                 "1000000000000"]) == 2
    err = _one_error(capsys)
    assert "targets (--targets) must be at most" in err and "1,000,000,000,000" in err


def test_file_names_with_markup_printed_literally(tmp_path, capsys) -> None:
    from dpaudit.cli import main

    p = _scores(tmp_path, "[bold red]x.csv")
    assert main(["audit", str(p)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "[bold red]x.csv" in out
