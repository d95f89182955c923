"""Old option spellings (documented in docs/cli.md) and the spelling of values that name things.

Imported by :func:`dpaudit.cli.main` before any command module: nothing heavy here.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["OPTION_ALIASES", "rewrite_aliases", "normalize_name"]

#: Old option spellings, per command path, kept as hidden aliases (deprecated in 0.2.0, removed
#: in 0.3.0: CHANGELOG.md).  Keys are the command path ("bound tight"); values map old -> new
#: spelling.
OPTION_ALIASES: dict[str, dict[str, str]] = {
    "bound tight": {"--n": "--canaries", "--r": "--guesses", "--u": "--wrong"},
    "bound bits": {"--n": "--canaries", "--errors": "--wrong"},
    "bound steinke": {"--m": "--canaries"},
    "bound mahloujifar": {"--m": "--canaries"},
    "curve": {"--eps": "--epsilon", "--q": "--sampling-rate"},
    "simulate": {"--eps": "--epsilon", "--q": "--sampling-rate",
                 "--true-epsilon": "--compute-true-epsilon"},
}


def rewrite_aliases(argv: Sequence[str], *,
                    notes: list[str] | None = None) -> list[str]:
    """Rewrite the old option spellings of :data:`OPTION_ALIASES` to the current ones.

    The command path is the longest key of the table that the leading words of ``argv`` spell;
    both ``--old VALUE`` and ``--old=VALUE`` are rewritten.  A deprecation note per alias is
    appended to ``notes``; :func:`dpaudit.cli.main` prints them on stderr after a successful run
    (never on stdout, so ``--json`` stays parseable; never before an ``error:`` line)."""
    args = list(argv)
    words: list[str] = []
    for a in args:
        if a.startswith("-"):
            break
        words.append(a)
    table: dict[str, str] = {}
    for k in range(len(words), 0, -1):
        key = " ".join(words[:k])
        if key in OPTION_ALIASES:
            table = OPTION_ALIASES[key]
            break
    if not table:
        return args
    out: list[str] = []
    for a in args:
        name, eq, val = a.partition("=")
        if name in table:
            if notes is not None:
                notes.append(f"note: {name} is deprecated, use {table[name]}")
            a = table[name] + eq + val
        out.append(a)
    return out


def normalize_name(text: str) -> str:
    """Values naming things are spelt with underscores; hyphens and case are forgiven."""
    return text.strip().lower().replace("-", "_")
