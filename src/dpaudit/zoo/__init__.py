"""The zoo: black-box audits of released DP libraries' mechanisms and aggregates.

One module per library (``<library>_zoo.py``, each with ``entries() -> list[ZooEntry]``), the
two-phase audit of one entry (:mod:`dpaudit.zoo.audit`), and the zoo run plus its Markdown
report (:mod:`dpaudit.zoo.run`).  The libraries are optional (extra ``dpaudit[zoo]``); a
library that is not installed is skipped with the reason.
"""

from __future__ import annotations

import importlib

from dpaudit.zoo.entry import Cause, Pair, ZooEntry, library_version, locate, tested_claim

__all__ = ["LIBRARIES", "entries", "Cause", "Pair", "ZooEntry", "library_version", "locate",
           "tested_claim"]

# library name (as --only takes it) -> (module, distribution whose import must succeed)
LIBRARIES: dict[str, tuple[str, str]] = {
    "dpaudit": ("dpaudit.zoo.reference_zoo", "numpy"),
    "diffprivlib": ("dpaudit.zoo.diffprivlib_zoo", "diffprivlib"),
    "opendp": ("dpaudit.zoo.opendp_zoo", "opendp"),
    # imports only with opendp 0.4.x installed (a known violation fixed in 0.5.0)
    "opendp-0.4": ("dpaudit.zoo.opendp_legacy_zoo", "dpaudit.zoo.opendp_legacy_zoo"),
    "python-dp": ("dpaudit.zoo.pydp_zoo", "pydp"),
    "pipeline-dp": ("dpaudit.zoo.pipelinedp_zoo", "pipeline_dp"),
    "smartnoise-sql": ("dpaudit.zoo.smartnoise_zoo", "snsql"),
    "smartnoise-synth": ("dpaudit.zoo.synth_zoo", "snsynth"),
}


def entries(only: tuple[str, ...] | None = None) -> tuple[list[ZooEntry], dict[str, str]]:
    """(entries, skipped libraries -> reason); ``only`` selects libraries or entry keys."""
    if only:
        known = set(LIBRARIES)
        for o in only:
            if o.split("/")[0] not in known:
                raise ValueError(f"--only must name a library ({', '.join(sorted(known))}) "
                                 f"or an entry key LIBRARY/NAME; got {o!r}")
    out: list[ZooEntry] = []
    skipped: dict[str, str] = {}
    for lib, (mod, imp) in LIBRARIES.items():
        if only and not any(o.split("/")[0] == lib for o in only):
            continue
        try:
            importlib.import_module(imp)
        except Exception as exc:  # noqa: BLE001 -- any import failure skips the library
            skipped[lib] = f"cannot import {imp}: {type(exc).__name__}: {exc}"
            continue
        for e in importlib.import_module(mod).entries():
            if only and not any(o == lib or o == e.key for o in only):
                continue
            out.append(e)
    return out, skipped
