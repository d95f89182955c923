"""``dpaudit demo``: audits of simulated mechanisms, correct and flawed, end to end, then a
short audit of REAL DP-SGD training (Opacus on digits; skipped with a note when the
``dpaudit[torch]`` extra is not installed)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import typer

from dpaudit.cli.common import app as _app
from dpaudit.cli.common import console, json_payload, print_json, print_results
from dpaudit.games.demo import TRAINING_DEMO, multi_run_demo, multi_run_demo_data
from dpaudit.outcome import Audit


@_app.command("demo")
def demo_cmd(
    seed: int = typer.Option(0, "--seed", help="Random seed."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
    report: Path = typer.Option(Path("dpaudit_demo.html"), "--report",
                                help="Where the demo writes its audit card (HTML)."),
) -> None:
    """Run the showcase audits: one-run DP-SGD (correct vs flawed), then a multi-run audit."""
    from dpaudit.games.audit import DEMO_SETTINGS, demo_dpsgd_run
    from dpaudit.output import check_output_target
    from dpaudit.report import build_report, write_report

    check_output_target(report, what="--report")  # before any work

    out: dict[str, object] = {}
    s = DEMO_SETTINGS
    cards = []
    for label, flawed in (("correct", False), ("flawed", True)):
        rep = demo_dpsgd_run(flawed=flawed, seed=seed)
        claimed, results = rep.claimed_epsilon, rep.results
        name = f"dpsgd_{label}"
        title = (f"One-run white-box audit of {'FLAWED (backprop clipping) ' if flawed else ''}"
                 f"DP-SGD: sigma={s['noise_multiplier']:g}, q={s['sampling_rate']:g}, "
                 f"T={s['steps']}, {s['canaries']:,} canaries, claimed eps={claimed:.3f} "
                 f"at delta={s['delta']:g}")
        # the card states the same verdict as `demo --json`
        audit = rep.to_audit()
        cards.append(build_report(audit.to_dict(), observations=rep.observations, title=title,
                                  settings={**s, "flawed": flawed, "seed": seed},
                                  command="dpaudit demo"))
        if as_json:
            out[name] = {"claimed_epsilon": claimed, "verdict": audit.message(),
                         "family": rep.settings["family"],
                         "results": [r.to_dict() for r in results]}
        else:
            print_results(results, claimed_epsilon=claimed, title=title)
    claimed_mr, delta = 2.0, 1e-5
    mu, ok = multi_run_demo(claimed_mr, delta, seed=seed)
    _, bad = multi_run_demo(claimed_mr, delta, noise_scale_bug=0.25, seed=seed + 1)
    ok = replace(ok, method="multi_run (correct Gaussian)")
    bad = replace(bad, method="multi_run (noise 4x too small)")
    for res, bug, sd in ((ok, 1.0, seed), (bad, 0.25, seed + 1)):
        _, member, score = multi_run_demo_data(claimed_mr, delta, noise_scale_bug=bug, seed=sd)
        cards.append(build_report(
            json_payload([res], claimed_epsilon=claimed_mr), observations=(member, score),
            title=f"Multi-run audit of a Gaussian sum query claimed ({claimed_mr:g}, "
                  f"{delta:g})-DP, {res.method.split('(')[-1].rstrip(')')}: 100,000 trials",
            settings={"claimed_epsilon": claimed_mr, "delta": delta, "trials": 100_000,
                      "noise_scale_bug": bug, "seed": sd}, command="dpaudit demo"))
    if as_json:
        out["multi_run"] = {"claimed_epsilon": claimed_mr, "mu": mu,
                            "correct": Audit.of(ok, claimed_mr).message(),
                            "flawed": Audit.of(bad, claimed_mr).message(),
                            "results": [ok.to_dict(), bad.to_dict()]}
        out["training"] = _training_demo(seed, as_json, cards)
        path = write_report(report, cards, page_title=_page_title(cards))
        out["report"] = str(path)
        print_json(out)
        return
    console.print(f"[bold]Multi-run audit[/bold]: Gaussian sum query claimed "
                  f"({claimed_mr:g}, {delta:g})-DP (mu = {mu:.4f}), 100,000 trials, "
                  f"95% confidence")
    print_results([ok, bad],
                  title="Classical multi-run audit (Clopper-Pearson, Bonferroni thresholds)",
                  extra={"claimed_epsilon": claimed_mr,
                         "correct": Audit.of(ok, claimed_mr).message(),
                         "flawed": Audit.of(bad, claimed_mr).message()})
    _training_demo(seed, as_json, cards)
    path = write_report(report, cards, page_title=_page_title(cards))
    console.print(f"[bold]Audit card[/bold] (open in a browser): {path}")


def _page_title(cards: list) -> str:
    """Title of the demo's card page: the number of audits it holds."""
    words = {4: "four", 6: "six"}
    return f"dpaudit demo: {words.get(len(cards), str(len(cards)))} audits"


def _training_demo(seed: int, as_json: bool, cards: list | None = None) -> dict[str, object]:
    """One real Opacus DP-SGD training audit, correct and with backprop clipping; with
    ``cards``, each run's audit card (ROC and privacy-region points from its canaries'
    scores) is appended to it."""
    import importlib.util

    from dpaudit.training._deps import EXTRA_HINT

    if any(importlib.util.find_spec(m) is None for m in ("torch", "opacus", "sklearn")):
        if not as_json:
            console.print(f"(real DP-SGD training audit skipped: {EXTRA_HINT})")
        return {"skipped": EXTRA_HINT}
    from dpaudit.cli.train_audit import run_train_audit_observed
    from dpaudit.report import build_report

    out: dict[str, object] = {}
    for label, flaw in (("correct", None), ("flawed", "backprop_clipping")):
        doc, obs = run_train_audit_observed(**TRAINING_DEMO, flawed=flaw, seed=seed)
        out[label] = doc
        if cards is not None:
            t = doc["training"]
            cards.append(build_report(
                doc, observations=obs, command="dpaudit demo",
                title=f"Real DP-SGD training audit ({'FLAWED: backprop clipping, ' if flaw else ''}"
                      f"Opacus, digits MLP): sigma={t['noise_multiplier']:g}, "
                      f"q={t['sampling_rate']:g}, T={t['steps']}, "
                      f"{TRAINING_DEMO['canaries']} gradient canaries",
                settings={**TRAINING_DEMO, "flawed": flaw, "seed": seed},
                run_seconds=t["seconds"]))
        if not as_json:
            t = doc["training"]
            bug = "FLAWED: backprop clipping, " if flaw else ""
            console.print(
                f"[bold]Real DP-SGD training[/bold] ({bug}"
                f"Opacus, digits MLP, sigma={t['noise_multiplier']:g}, q={t['sampling_rate']:g}, "
                f"T={t['steps']}, {TRAINING_DEMO['canaries']} Dirac gradient canaries, "
                f"test accuracy {t['test_accuracy']:.3f}, {t['seconds']:.1f} s): "
                f"{doc['verdict']} [{doc['verdict_method']}; Opacus epsilon "
                f"{t['opacus_epsilon']:.3f}]")
    return out
