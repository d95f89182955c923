"""Run the zoo and write its report (docs/zoo.md).

The confidence of each entry's final audit is 1 - (1 - confidence) / K for K entries
(Bonferroni), so the probability that the run reports any false violation is at most
1 - confidence (:mod:`dpaudit.zoo.audit`).  With ``store_dir`` every entry's final trials go to
its own SQLite trial store (durable; ``resume=True`` continues an interrupted run).
"""

from __future__ import annotations

import html
import math
import platform
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dpaudit.validation import check_confidence, check_count
from dpaudit.zoo import entries as zoo_entries
from dpaudit.zoo.audit import ZooResult, audit_entry
from dpaudit.zoo.entry import ZooEntry
from dpaudit.zoo.fixed import check_all
from dpaudit.zoo.greybox_check import GreyboxSummary, greybox_entry

__all__ = ["ZooRun", "run_zoo", "markdown", "COVERAGE_NOTES"]

# What the zoo does not run, and why (printed at the end of the report).
COVERAGE_NOTES = (
    "Tumult Analytics is not in the zoo: tmlt.analytics 0.21.0 installs here (about 8 "
    "minutes: pyspark 3.5.9 is built from a 318 MB source archive; it pins pandas 1.5 and "
    "numpy 1.26, so it needs a venv of its own, and PYSPARK_PYTHON must point at that venv), "
    "but the local Spark session took 162 s to start and one COUNT query 22 to 210 s on our "
    "2-core machine, so the thousands of runs of a black-box audit would take many hours.",
    "OpenDP 0.16.0 (outside the zoo extra: smartnoise-sql 1.0.10 requires opendp 0.14.x) is "
    "audited with the same entries from a venv with opendp==0.16.0: docs/zoo-opendp-0.16.md.",
    "OpenDP 0.4.0 (the version before the fix of Casacuberta et al. 2022) still installs "
    "(numpy < 2); its sized float sum and mean are audited by the library `opendp-0.4` "
    "from a venv with opendp==0.4.0 (command in dpaudit.zoo.opendp_legacy_zoo): "
    "docs/zoo-opendp-0.4.md.",
    "diffprivlib LinearRegression with fit_intercept=True spends its intercept slice twice "
    "(IBM/differential-privacy-library issue #104, item 2: the X and y means each get "
    "epsilon / (d + 1)), i.e. 1.5 epsilon for one feature.  Not counted: diffprivlib does not "
    "state its adjacency, and under the add/remove reading a replaced record is allowed "
    "2 epsilon, which 1.5 epsilon does not exceed.",
    "SmartNoise SQL spends Privacy(epsilon) on each noisy aggregate (AVG = SUM / COUNT costs "
    "2 epsilon, VAR 3 epsilon); this is documented (PrivateReader.get_privacy_cost) and the "
    "zoo's claims are those costs, not a violation.",
    "The precision attack was run on every float noise sampler of the zoo's libraries "
    "(studies/zoo_precision.py, 3000 draws per value): diffprivlib's Laplace, "
    "LaplaceBoundedDomain, LaplaceBoundedNoise, Staircase, Gaussian and GaussianAnalytic "
    "separate values 0 and 1 (the *-precision entries; LaplaceTruncated and LaplaceFolded "
    "call Laplace.randomise, the Laplace-precision line, and leave outputs in (-1/2, 1/2) "
    "unchanged); PyDP's GaussianMechanism separates them too (unexplained: its cause is in "
    "compiled C++ whose source at the pinned version was not located); diffprivlib's Uniform "
    "and Snapping, OpenDP's float make_laplace / make_gaussian (which SmartNoise SQL calls) "
    "and PyDP's LaplaceMechanism (which PipelineDP calls; granularity 2^-40) show no "
    "separation.  Integer and categorical samplers (Geometric, GaussianDiscrete, Exponential, "
    "PermuteAndFlip) are outside this attack.",
    "PyDP BoundedSum / BoundedMean with large bounds (Casacuberta et al. 2022; "
    "google/differential-privacy issue #126): not audited yet.  PyDP's claim is add/remove "
    "with sensitivity max(|L|, |U|), so a float construction must move the sum by more than "
    "max(|L|, |U|); the diffprivlib construction (bounds [2^50, 2^50 + 1], a replaced "
    "record) moves it by 1024, far below 2^50, and no construction that does was found here.",
    "Synthetic data (dpaudit.zoo.synth_zoo): smartnoise-synth's MWEM is audited with the "
    "released-synthetic-table game (neighbours differing in one worst-case record, scores "
    "reading that record's cells in the synthetic table) at 400 final trials (one fit takes "
    "about 0.4 to 1.4 s here).  MST and AIM (private-pgm on JAX) take about 16 s and 27 s per "
    "fit on a 10-record, 3-column table, so the thousands of fits of a black-box audit, and the "
    "tight MST / AIM audit of arXiv 2604.18352 (mu_emp ~ 0.43 against mu = 0.45), are out of "
    "this zoo's budget; the category leak found in MWEM lives in the shared preprocessing "
    "(TableTransformer.create), which MST and AIM also call when given no transformer (not "
    "audited here).",
    "OpenDP 0.16.0 (docs/zoo-opendp-0.16.md): the sized float variance and sum of squared "
    "deviations show bounds above the claim there too, but the compiled cause's line is "
    "pinned to the v0.14.2 tag and the v0.16.0 source was not available here to read the "
    "line, so at 0.16.0 they are 'unexplained' (a regenerated per-version report lists them "
    "under 'Bounds above the claim without a located cause' instead of 'None').",
)


# Libraries outside the `zoo` extra: how their venv is built (printed when a run has them).
VENVS = {
    "opendp-0.4": "python3 -m venv /tmp/venv-odp04 && /tmp/venv-odp04/bin/pip install "
                  "opendp==0.4.0 \"numpy<2\" -e . && /tmp/venv-odp04/bin/python -m dpaudit zoo "
                  "--only opendp-0.4 --out docs/zoo-opendp-0.4.md",
}


@dataclass(frozen=True)
class ZooRun:
    results: tuple[ZooResult, ...]
    greybox: tuple[GreyboxSummary | None, ...]
    fixed: tuple[tuple[Any, bool | None, str], ...]
    skipped: dict[str, str]
    trials: int
    seed: int
    confidence: float
    entry_confidence: float

    def to_dict(self) -> dict[str, Any]:
        return {"trials": self.trials, "seed": self.seed, "confidence": self.confidence,
                "entry_confidence": self.entry_confidence, "skipped": self.skipped,
                "results": [{**r.to_dict(), "greybox": _gb_dict(g)}
                            for r, g in zip(self.results, self.greybox, strict=True)],
                "violations": [r.key for r in self.results if r.verdict == "violation"],
                "fixed": [{"library": f.library, "reference": f.reference,
                           "fixed_by": f.fixed_by, "reproduces": rep, "evidence": ev}
                          for f, rep, ev in self.fixed]}


def _gb_dict(g: GreyboxSummary | None) -> dict[str, Any] | None:
    if g is None:
        return None
    return {"runs": g.runs, "seconds": g.seconds, "primitive_calls": g.primitive_calls,
            "findings": [{"pair": p, **f.to_dict()} for p, f in g.findings]}


def run_zoo(*, trials: int = 4000, seed: int = 0, only: tuple[str, ...] | None = None,
            confidence: float = 0.99, store_dir: str | Path | None = None,
            resume: bool = False, entries: list[ZooEntry] | None = None,
            progress: Callable[[ZooResult], None] | None = None,
            partial: Callable[[ZooRun], None] | None = None) -> ZooRun:
    """Audit every selected entry; ``trials`` is each final audit's budget (times the
    entry's ``trials_scale``).  ``partial(run_so_far)`` is called after every entry (the CLI
    rewrites the report there, so an interrupted run keeps what it did)."""
    trials = check_count("trials", trials, minimum=20)
    seed = check_count("seed", seed)
    confidence = check_confidence(confidence)
    skipped: dict[str, str] = {}
    if entries is None:
        entries, skipped = zoo_entries(only)
    if not entries:
        raise ValueError("no zoo entry selected (check --only and the installed libraries)")
    conf = 1.0 - (1.0 - confidence) / len(entries)
    out = []
    gbs = []
    for e in entries:
        store = None
        if store_dir is not None:
            Path(store_dir).mkdir(parents=True, exist_ok=True)
            store = Path(store_dir) / (e.key.replace("/", "__") + ".sqlite")
        r = audit_entry(e, trials=trials, seed=seed, confidence=conf, store=store,
                        resume=resume and store is not None and store.exists())
        out.append(r)
        gbs.append(greybox_entry(e, seed=seed))
        if progress is not None:
            progress(r)
        if partial is not None:
            partial(ZooRun(tuple(out), tuple(gbs), (), skipped, trials, seed, confidence, conf))
    fixed = tuple(check_all()) if only is None or any(
        o.split("/")[0] in ("smartnoise-sql", "opendp") for o in only) else ()
    return ZooRun(tuple(out), tuple(gbs), fixed, skipped, trials, seed, confidence, conf)


def _md(x: Any) -> str:
    """A user / library string in a Markdown table cell (escaped)."""
    return html.escape(str(x)).replace("|", "&#124;").replace("\n", " ")


def _num(x: float) -> str:
    return f"{x:.3f}" if x < 1e4 else f"{x:.4g}"


def _cur(r: ZooResult) -> str:
    return "rho " if r.currency == "rho" else ""


def _claim(r: ZooResult) -> str:
    if r.currency == "rho":
        return f"rho {r.claimed_epsilon:.4g} (zCDP)"
    return f"{r.claimed_epsilon:.4g} ({r.delta:.2g})"


def _detects(r: ZooResult) -> str:
    """The row's power (:mod:`dpaudit.zoo.power`), or "-" for a violation."""
    if r.verdict == "violation" or math.isnan(r.detectable_mass):
        return "-"
    m = "no set" if math.isinf(r.detectable_mass) else f"p >= {r.detectable_mass:.3g}"
    e = "no eps'" if math.isinf(r.detectable_epsilon) else f"eps' >= {r.detectable_epsilon:.3g}"
    return f"{m}; {e}"


def markdown(run: ZooRun, *, command: str) -> str:
    """The docs/zoo.md report."""
    lines = [
        "# The zoo: black-box audits of released DP libraries",
        "",
        f"Regenerate with `{_md(command)}` (Python {platform.python_version()}; the "
        "libraries come from the pinned extra `dpaudit[zoo]`, e.g. `make zoo-test` builds "
        "`.venv-zoo`).  Options: `--trials N` (final trials per entry, times its share), "
        "`--seed S`, `--only LIB[,LIB/NAME]`, `--confidence C`, `--store-dir DIR [--resume]` "
        "(durable trial stores), `--json`.  Method: docs/greybox.md and `dpaudit.zoo`.",
        "",
        f"Each final audit: {run.trials} trials (times the entry's share), seed {run.seed}, "
        f"confidence {run.entry_confidence:.6f} per entry (Bonferroni over "
        f"{len(run.results)} entries: any false violation in this table has probability "
        f"<= {1 - run.confidence:.2g}).  The neighbours, score and threshold were chosen on "
        "separate search trials (other seeds); the bound is the Clopper-Pearson bound of the "
        "(epsilon, delta) privacy region at that one threshold (no family assumed).  "
        "\"tested eps\" is the claim for the chosen neighbours (twice the claim for a "
        "replaced record when the library's adjacency is add/remove or unstated).  A verdict "
        "\"violation\" needs the bound above the tested claim and the cause located in the "
        "installed library source; \"unexplained\" (bound above, no located cause) is not a "
        "finding.  A rho-zCDP claim is audited in its own currency: its row bounds rho under "
        "the trade-off curve every rho-zCDP mechanism satisfies (dpaudit.curves.zcdp), not a "
        "converted epsilon.  \"detects\" is the row's power (dpaudit.zoo.power): the smallest "
        "output set of probability p under one data set and 0 under the other, and the "
        "smallest randomized-response epsilon', that this audit's trials (about half on each "
        "data set) and confidence put above the tested claim at their expected counts; a "
        "violation smaller than that can pass as \"no violation found\".",
        "",
    ]
    groups = sorted({r.key.split("/")[0] for r in run.results} & set(VENVS))
    lines += [f"The `{_md(g)}` entries need a venv of their own: `{_md(VENVS[g])}`."
              for g in groups] + ([""] if groups else [])
    lines += [
        "| library | version | mechanism | neighbours | score | claimed eps (delta) | "
        "tested eps | audit eps lower bound | trials (search) | time s | verdict | detects | "
        "cause | grey-box |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r, g in zip(run.results, run.greybox, strict=True):
        cause = f"`{_md(r.cause)}`" if r.cause else "-"
        lines.append(
            f"| {_md(r.library)} | {_md(r.version)} | {_md(r.description)} | "
            f"{_md(r.neighbours)} | {_md(r.score)} | {_claim(r)} | {_cur(r)}{r.tested_epsilon:.4g}"
            f" | {_cur(r)}{_num(r.epsilon_lb)} | {r.trials} "
            f"({r.search_trials}) | {r.seconds:.1f} | **{_md(r.verdict)}** | {_detects(r)} | "
            f"{cause} | {'black-box only' if g is None else g.describe()} |")
    viol = [r for r in run.results if r.verdict == "violation"]
    lines += ["", "## Violations", ""]
    unexplained = [r for r in run.results if r.verdict == "unexplained"]
    if not viol:
        lines += ["None in this run" + (" with a cause located at the installed version; "
                                        "see the unexplained rows below." if unexplained
                                        else "."), ""]
    for r in viol:
        lines += [f"### {_md(r.key)} ({_md(r.library)} {_md(r.version)})", "",
                  f"* bound: {r.currency} >= {_num(r.epsilon_lb)} > tested "
                  f"{r.tested_epsilon:.4g} "
                  f"at confidence {r.confidence:.6f} ({r.trials} fresh trials; TPR "
                  f"{r.tpr:.3f}, FPR {r.fpr:.4f} at threshold {r.threshold:.6g} on "
                  f"{_md(r.score)})",
                  f"* neighbours: {_md(r.neighbours)} ({_md(r.adjacency)})",
                  f"* cause: `{_md(r.cause)}`: {_md(r.cause_explanation)}",
                  f"* reference: {_md(r.cause_reference)} "
                  f"({'known' if r.cause_known else 'new'})", ""]
    if unexplained:
        lines += ["## Bounds above the claim without a located cause (unexplained)", "",
                  "Not counted as findings: the bound holds at its confidence, but the "
                  "library line that causes it was not located in the installed version.", ""]
        lines += [f"* {_md(r.key)} ({_md(r.library)} {_md(r.version)}): {r.currency} >= "
                  f"{_num(r.epsilon_lb)} > tested {r.tested_epsilon:.4g} at confidence "
                  f"{r.confidence:.6f} (TPR {r.tpr:.3f}, FPR {r.fpr:.4f} on {_md(r.score)}, "
                  f"{_md(r.neighbours)}){'; ' + _md(r.notes) if r.notes else ''}"
                  for r in unexplained]
        lines.append("")
    clean = [r for r in run.results if r.verdict == "no violation found"]
    if clean:
        lines += ["## What the \"no violation found\" rows tried", "",
                  "Every candidate pair and score below was searched (search trials), the best "
                  "kept for the final audit; \"detects\" as in the table.", "",
                  "| entry | neighbours searched | scores searched | detects |",
                  "|---|---|---|---|"]
        lines += [f"| {_md(r.key)} | {_md('; '.join(r.pairs_tried))} | "
                  f"{_md('; '.join(r.scores_tried))} | {_detects(r)} |" for r in clean]
        lines.append("")
    pairs = [(r, g) for r, g in zip(run.results, run.greybox, strict=True)
             if r.verdict == "violation" and g is not None and g.findings]
    if pairs:
        lines += ["## Grey-box vs black-box on the same violations", "",
                  "Grey-box: two runs per candidate pair with identical randomness "
                  "(`dpaudit.greybox`); black-box: the search and final trials above.", "",
                  "| entry | grey-box runs | grey-box s | black-box runs | black-box s | "
                  "runs ratio |", "|---|---|---|---|---|---|"]
        for r, g in pairs:
            bb = r.trials + r.search_trials
            lines.append(f"| {_md(r.key)} | {g.runs} | {g.seconds:.3f} | {bb} | "
                         f"{r.seconds:.1f} | {bb / g.runs:.0f} |")
        lines.append("")
    if run.fixed:
        lines += ["## Public violations that no longer reproduce", "",
                  "Checked at run time against the installed version; not counted as "
                  "findings.", "",
                  "| library | report | violation | fixed by | reproduces here | evidence |",
                  "|---|---|---|---|---|---|"]
        for f, rep, ev in run.fixed:
            status = "not checked" if rep is None else ("**yes**" if rep else "no")
            lines.append(f"| {_md(f.library)} | {_md(f.reference)} | {_md(f.summary)} | "
                         f"{_md(f.fixed_by)} | {status} | {_md(ev)} |")
        lines.append("")
    if run.skipped:
        lines += ["## Skipped libraries", ""]
        lines += [f"* {_md(k)}: {_md(v)}" for k, v in run.skipped.items()]
    lines += ["", "## Coverage notes", ""] + [f"* {_md(n)}" for n in COVERAGE_NOTES]
    notes = [r for r in run.results if r.randomness == "library"]
    if notes:
        lines += ["", "## Randomness", "",
                  "Entries of " + ", ".join(sorted({_md(r.library) for r in notes})) +
                  " draw noise from the library's own generator (compiled code), so their "
                  "trials are not reproducible from the seed; the bounds remain valid (each "
                  "trial is an independent run).  These libraries are audited black-box only."]
    return "\n".join(lines) + "\n"
