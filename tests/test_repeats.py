"""dpaudit.repeats: repeated canaries in score files are refused (they break the independence
every bound assumes), with an option to proceed; rounded, discrete and periodic-by-design
scores are not mistaken for repeats.  Also the one rule for text scores in every format."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dpaudit.repeats import (
    ALLOW_OPTION,
    DUPLICATE_FRACTION,
    MIN_DUPLICATES,
    check_repeats,
    duplicate_warning,
    find_repeats,
)


def _normal(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    m = rng.random(n) < 0.5
    return m, rng.normal(size=n) + m


def test_file_concatenated_with_itself_is_refused() -> None:
    m, s = _normal(300)
    for k in (2, 3):
        r = find_repeats(np.tile(m, k), np.tile(s, k))
        assert (r.copies, r.repeated, r.refused) == (k, 300 * (k - 1), True)
    # rounded scores (ties are natural): caught by the whole-file rule, not the precision rule
    sr = np.round(s, 2)
    r = find_repeats(np.tile(m, 2), np.tile(sr, 2))
    assert r.copies == 2 and r.refused
    with pytest.raises(ValueError, match="2 exact copies of the first 300") as e:
        check_repeats(np.tile(m, 2), np.tile(s, 2), "x.csv")
    assert ALLOW_OPTION in str(e.value) and "independence" in str(e.value)
    assert check_repeats(np.tile(m, 2), np.tile(s, 2), "x.csv", allow=True).copies == 2


def test_shuffled_full_precision_repeats() -> None:
    m, s = _normal(1000, seed=1)
    need = 2 * max(MIN_DUPLICATES, int(np.ceil(DUPLICATE_FRACTION * 1000)))  # of 1000 + need
    for extra, refused in ((need, True), (3, False)):
        idx = np.random.default_rng(2).choice(1000, extra, replace=False)
        mm, ss = np.concatenate([m, m[idx]]), np.concatenate([s, s[idx]])
        perm = np.random.default_rng(3).permutation(mm.size)
        r = find_repeats(mm[perm], ss[perm])
        assert (r.copies, r.precise, r.refused) == (1, extra, refused)
        warning = duplicate_warning(r, "f.csv")
        assert (warning is None) == refused and (refused or "3 row(s)" in warning)


@pytest.mark.parametrize("case", ["alternating_perfect_guesses", "discrete", "rounded",
                                  "float32", "distinct"])
def test_natural_ties_are_not_repeats(case) -> None:
    rng = np.random.default_rng(4)
    n = 20_000
    m = rng.random(n) < 0.5
    if case == "alternating_perfect_guesses":  # periodic by design, 2 distinct rows
        m = np.arange(n) % 2 == 1
        s = m.astype(float)
    elif case == "discrete":  # counts: ties everywhere, no precision
        s = rng.binomial(50, 0.5 + 0.1 * m).astype(float)
    elif case == "rounded":
        s = np.round(rng.normal(size=n) + m, 3)
    elif case == "float32":  # birthday collisions of float32 scores: far below 1%
        s = (rng.normal(size=n) + m).astype(np.float32).astype(float)
    else:
        s = rng.normal(size=n) + m
    r = find_repeats(m, s)
    assert not r.refused and r.copies == 1
    assert case != "distinct" or r.repeated == 0


@pytest.mark.slow  # three CLI audits
def test_load_scores_and_the_cli_refuse_a_doubled_file(tmp_path, cli) -> None:
    from dpaudit.io import load_scores

    m, s = _normal(200, seed=5)
    body = "".join(f"{int(a)},{float(b)!r}\n" for a, b in zip(m, s, strict=True))
    p = tmp_path / "doubled.csv"
    p.write_text("member,score\n" + body + body)
    with pytest.raises(ValueError, match="--allow-duplicates"):
        load_scores(p)
    assert load_scores(p, allow_duplicates=True).n == 400
    for cmd in ("audit", "one-run"):
        rc, _, err = cli(cmd, p)
        assert rc == 2 and "2 exact copies" in err and "--allow-duplicates" in err
    rc, out, err = cli("audit", p, "--allow-duplicates", "--json")
    assert rc == 0 and json.loads(out)["results"]


def test_repeats_after_aggregation(tmp_path) -> None:
    """With --group-col the check runs on the per-user observations."""
    from dpaudit.adapters.tables import read_table

    m, s = _normal(100, seed=6)
    rows = [f"{i},{int(a)},{float(b)!r}" for i, (a, b) in enumerate(zip(m, s, strict=True))]
    p = tmp_path / "g.csv"
    p.write_text("user,member,score\n" + "\n".join(rows + rows) + "\n")
    obs = read_table(p, group_col="user", aggregate="max")  # each user once: no repeat
    assert obs.n == 100
    with pytest.raises(ValueError, match="2 exact copies"):
        read_table(p)


# ------------------------------------------------------------------ text scores: one rule
def _text_files(tmp_path) -> list:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    vals = ["0.1", "0.9", "0.2", "0.8"]
    pq.write_table(pa.table({"member": [0, 1, 0, 1], "score": vals}), tmp_path / "s.parquet")
    np.savez(tmp_path / "s.npz", member=np.array([0, 1, 0, 1]), score=np.array(vals))
    (tmp_path / "s.json").write_text(json.dumps({"member": [0, 1, 0, 1], "score": vals}))
    (tmp_path / "r.json").write_text(json.dumps([{"member": 0, "score": "0.1"},
                                                 {"member": 1, "score": 0.9}]))
    return [tmp_path / n for n in ("s.parquet", "s.npz", "s.json", "r.json")]


@pytest.mark.slow  # imports pyarrow
def test_text_scores_refused_in_every_typed_format(tmp_path) -> None:
    from dpaudit.adapters.tables import read_table
    from dpaudit.io import load_scores

    for p in _text_files(tmp_path):
        readers = [lambda p=p: read_table(p), lambda p=p: read_table(p, score_col="score",
                                                                      member_col="member")]
        if p.suffix != ".parquet":
            readers.append(lambda p=p: load_scores(p))
        for read in readers:
            with pytest.raises(ValueError, match="must be numbers"):
                read()
    # CSV cells are text: quoted numbers are numbers there, in both readers
    c = tmp_path / "q.csv"
    c.write_text('member,score\n0,"0.1"\n1,"0.9"\n0,0.2\n1,0.8\n')
    assert load_scores(c).score.tolist() == [0.1, 0.9, 0.2, 0.8]
    assert read_table(c, member_col="member").score.tolist() == [0.1, 0.9, 0.2, 0.8]
