"""Print the requirements of an extra of pyproject.toml, one per line: the project's own
dependencies plus the extra's, with self-references (``dpaudit[a,b]``) expanded.

``make test`` installs the zoo's venv from this list while the main venv installs, and adds
the project itself (``pip install --no-deps -e .``) once no other install is building its
metadata in the source tree (setuptools writes ``src/dpaudit.egg-info`` while it builds).

    python tools/extra_requirements.py zoo-test > requirements.txt
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent


def requirements(extra: str) -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    name, extras = project["name"], project.get("optional-dependencies", {})
    if extra not in extras:
        raise SystemExit(f"error: extra must be one of {sorted(extras)}; got {extra!r}")
    out, seen, todo = list(project.get("dependencies", [])), set(), [extra]
    while todo:
        e = todo.pop()
        if e in seen:
            continue
        seen.add(e)
        for req in extras[e]:
            m = re.fullmatch(rf"{re.escape(name)}\[([^\]]+)\]", req.strip())
            if m:
                todo.extend(x.strip() for x in m.group(1).split(","))
            elif req not in out:
                out.append(req)
    return out


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python tools/extra_requirements.py EXTRA")
    print("\n".join(requirements(sys.argv[1])))
