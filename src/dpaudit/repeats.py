"""Repeated observations in score files: rows that repeat earlier rows, and files that are k
exact copies of one block (a score file concatenated with itself).

Every bound dpaudit computes assumes independent canaries; a canary counted twice is not
independent of itself, and the bound's confidence is lost: a score file concatenated with
itself raised the false-violation rate of a correct mechanism from about 2% to 6.7% (20 of
300 runs).  The checks run at the score-file boundary (:func:`dpaudit.io.load_scores`,
:func:`dpaudit.adapters.tables.read_table`) and refuse by default, naming the option that
proceeds (``allow_duplicates=True``; on the command line ``--allow-duplicates``):

* **whole-file repeat** -- the rows, in file order, are k >= 2 copies of their first n/k rows,
  and that block holds at least :data:`MIN_BLOCK_DISTINCT` distinct rows (a short periodic
  file, such as perfect 0/1 guesses of alternating canaries, happens by design);
* **duplicated rows** -- rows equal (membership and score) to an earlier row whose score has
  full precision (more than :data:`PRECISE_DIGITS` significant digits): two independent
  canaries almost never tie on such a score, while rounded or discrete scores tie naturally
  and are never counted.  At least :data:`MIN_DUPLICATES` such rows making up at least
  :data:`DUPLICATE_FRACTION` of the file are refused; fewer give a warning
  (:func:`duplicate_warning`).

Cost: one sort of the scores' bit patterns per class, about one argsort of the scores at 1e6
(no Python loop over rows; the precision of at most :data:`PRECISION_SAMPLE` repeated rows is
inspected, the rest extrapolated).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["RepeatReport", "find_repeats", "check_repeats", "duplicate_warning",
           "MIN_BLOCK_DISTINCT", "PRECISE_DIGITS", "MIN_DUPLICATES", "DUPLICATE_FRACTION",
           "ALLOW_OPTION"]

#: a whole-file repeat is refused when its block holds at least this many distinct rows
MIN_BLOCK_DISTINCT = 8
#: a score with more significant digits than this is "full precision" (ties are improbable)
PRECISE_DIGITS = 8
#: duplicated full-precision rows are refused from this many on ...
MIN_DUPLICATES = 5
#: ... when they are also at least this fraction of the rows (fewer: a warning)
DUPLICATE_FRACTION = 0.01
#: at most this many repeated rows have their precision inspected (the rest extrapolated)
PRECISION_SAMPLE = 10_000
#: the option named in the messages
ALLOW_OPTION = "--allow-duplicates (allow_duplicates=True)"


@dataclass(frozen=True)
class RepeatReport:
    """What :func:`find_repeats` found: ``copies`` (k >= 2 when the rows are k copies of one
    block, else 1), ``repeated`` (rows equal to an earlier row), ``precise`` (of those, the
    rows whose score has full precision; estimated from a sample when there are many)."""

    n: int
    copies: int
    repeated: int
    precise: int

    @property
    def refused(self) -> bool:
        """Whether the rows break independence beyond chance (see module)."""
        return self.copies >= 2 or (self.precise >= MIN_DUPLICATES and
                                    self.precise >= DUPLICATE_FRACTION * self.n)


def _repeated_scores(member: np.ndarray, score: np.ndarray) -> np.ndarray:
    """The scores of the rows equal (member and score, bit for bit) to another row, all but
    one of each group: one sort of the bit patterns per class, no permutation."""
    bits = np.ascontiguousarray(score, dtype=np.float64).view(np.int64)
    out = []
    for cls in (member, ~member):
        sb = np.sort(bits[cls])
        out.append(sb[1:][sb[1:] == sb[:-1]])
    return np.concatenate(out).view(np.float64)


def _precise(x: float) -> bool:
    return float(f"{x:.{PRECISE_DIGITS}g}") != x


def _copies(member: np.ndarray, score: np.ndarray, distinct: int) -> int:
    """k when the rows are k >= 2 copies of their first n/k rows (smallest block), else 1."""
    n = score.size
    if distinct < MIN_BLOCK_DISTINCT:
        return 1
    for k in range(n // max(distinct, 1), 1, -1):  # the block holds every distinct row
        if n % k:
            continue
        b = n // k
        if score[b] != score[0] or member[b] != member[0]:
            continue
        if np.array_equal(score[b:], score[:-b]) and np.array_equal(member[b:], member[:-b]):
            return k
    return 1


def find_repeats(member: object, score: object) -> RepeatReport:
    """Count repeated rows and detect a whole-file repeat (see module)."""
    m = np.asarray(member, dtype=bool).reshape(-1)
    s = np.asarray(score, dtype=float).reshape(-1)
    n = int(s.size)
    rep = _repeated_scores(m, s)
    repeated = int(rep.size)
    if repeated == 0:
        return RepeatReport(n, 1, 0, 0)
    sample = rep[:: max(1, repeated // PRECISION_SAMPLE)][:PRECISION_SAMPLE]
    hits = sum(_precise(float(v)) for v in sample)
    precise = hits if sample.size == repeated else int(round(hits / sample.size * repeated))
    copies = _copies(m, s, n - repeated) if 2 * repeated >= n else 1
    return RepeatReport(n, copies, repeated, precise)


def check_repeats(member: object, score: object, source: str, *,
                  allow: bool = False) -> RepeatReport:
    """:func:`find_repeats`, and a ValueError naming ``source`` and :data:`ALLOW_OPTION` when
    the rows are refused (unless ``allow``)."""
    r = find_repeats(member, score)
    if r.refused and not allow:
        if r.copies >= 2:
            what = (f"its {r.n:,} rows are {r.copies} exact copies of the first "
                    f"{r.n // r.copies:,} (a file concatenated with itself?)")
        else:
            what = (f"{r.precise:,} of its {r.n:,} rows repeat an earlier row exactly "
                    f"(membership and a full-precision score)")
        raise ValueError(f"{source}: {what}; a canary counted twice breaks the independence "
                         f"every bound assumes -- remove the repeated rows, or pass "
                         f"{ALLOW_OPTION} if they are distinct canaries")
    return r


def duplicate_warning(report: RepeatReport, source: str) -> str | None:
    """A warning for repeated full-precision rows below the refusal threshold, else None."""
    if report.precise == 0 or report.refused:
        return None
    return (f"{source}: {report.precise:,} row(s) repeat an earlier row exactly (membership and "
            f"a full-precision score); if they are the same canary counted twice, remove them: "
            f"repeated canaries break the independence every bound assumes")
