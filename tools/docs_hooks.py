"""MkDocs hooks of the documentation site (``mkdocs.yml``: ``hooks:``).

* the CLI reference: the marker ``<!-- dpaudit:cli-reference -->`` in a page is replaced by the
  reference generated from the typer commands (``tools/cli_reference.py``);
* the maths: MathJax 3 (``tex-svg.js``, one self-contained file) is copied into the site from
  the ``django-static-mathjax`` package (declared in the ``docs`` extra), so that the site
  builds and renders offline; a missing package is a build error, not a silent CDN;
* pages written by other work that may or may not exist yet: ``docs/llm.md`` (training a
  language model) joins the navigation and the training guide's link when it is there;
* the API reference is complete by construction: a module of ``src/dpaudit`` that no page of
  ``docs/reference/api/`` names (``::: module``) is documented on a generated page, "More
  modules" (``reference/api/more.md``), until it is given a place in a curated page;
* a page under ``docs/`` that the navigation does not list is added to a "More pages" section
  (titled by its first heading), so pages written on other branches are reachable at once;
* the docs test's words in a code fence's info string (``no-run``, ``run-by=FILES``: see
  tests/test_docs.py) are dropped before the page is rendered: the site's fences
  (``pymdownx.superfences``) do not open on an info string with unknown words, and the block
  and every block after it on the page rendered as text.
"""

from __future__ import annotations

import importlib.util
import logging
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))

import cli_reference  # noqa: E402

log = logging.getLogger("mkdocs.hooks.dpaudit")
MATHJAX = "javascripts/mathjax/tex-svg.js"
LLM_MARKER = "<!-- dpaudit:llm-link -->"
#: optional pages: path under docs/ -> (nav section, title), added when the file exists
OPTIONAL_PAGES = {"llm.md": ("Topics", "Training a language model")}


API_DIR = "reference/api"
MORE_PAGE = f"{API_DIR}/more.md"
#: modules left out of the API reference on purpose: the CLI (its reference is generated from
#: the commands), the paper reproductions, one module per zoo library / grey-box hook set, the
#: card's renderers (reached through dpaudit.report.write)
UNDOCUMENTED = re.compile(r"^dpaudit\.(cli|papers|data)(\.|$)|^dpaudit\.zoo\.\w+_zoo$|"
                          r"^dpaudit\.greybox\.\w+_hooks$|^dpaudit\.zoo\.greybox_check$|"
                          r"^dpaudit\.report\.(html|png|browser)$")


def public_modules(src: Path = ROOT / "src" / "dpaudit") -> list[str]:
    """Every module of the package that the API reference should document."""
    out = []
    for path in sorted(src.rglob("*.py")):
        rel = path.relative_to(src.parent).with_suffix("")
        if path.name == "__init__.py" or path.name.startswith("_"):
            continue
        name = ".".join(rel.parts)
        if not UNDOCUMENTED.search(name):
            out.append(name)
    return out


def documented_modules(docs: Path) -> set[str]:
    """The modules named by a ``::: module`` line of a curated API page."""
    text = "\n".join(p.read_text(encoding="utf-8") for p in (docs / API_DIR).glob("*.md"))
    return set(re.findall(r"^::: ([\w.]+)\s*$", text, flags=re.M))


def uncovered_modules(docs: Path) -> list[str]:
    """Modules no curated page documents (they go on the generated "More modules" page)."""
    have = documented_modules(docs)
    return [m for m in public_modules() if m not in have]


def _mathjax_source() -> Path | None:
    spec = importlib.util.find_spec("mathjax")
    if spec is None or not spec.submodule_search_locations:
        return None
    for base in spec.submodule_search_locations:
        path = Path(base) / "static" / "mathjax" / "es5" / "tex-svg.js"
        if path.is_file():
            return path
    return None


def _nav_pages(items: Any) -> set[str]:
    out: set[str] = set()
    for item in items if isinstance(items, list) else [items]:
        if isinstance(item, str):
            out.add(item)
        elif isinstance(item, dict):
            for value in item.values():
                out |= _nav_pages(value)
    return out


def _title(path: Path) -> str:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return path.stem


def on_config(config: Any) -> Any:
    docs = Path(config["docs_dir"])
    optional = set(OPTIONAL_PAGES)
    listed = _nav_pages(config["nav"]) | optional
    extra = [p for p in sorted(docs.rglob("*.md"))
             if p.relative_to(docs).as_posix() not in listed]
    if extra:
        config["nav"].append({"More pages": [{_title(p): p.relative_to(docs).as_posix()}
                                             for p in extra]})
    if uncovered_modules(docs):
        for item in config["nav"]:
            if isinstance(item, dict) and "Reference" in item:
                for sub in item["Reference"]:
                    if isinstance(sub, dict) and "API reference" in sub:
                        sub["API reference"].append({"More modules": MORE_PAGE})
    for page, (section, title) in OPTIONAL_PAGES.items():
        if not (docs / page).is_file():
            continue
        for item in config["nav"]:
            if isinstance(item, dict) and section in item:
                entries = item[section]
                if not any(page in e.values() for e in entries if isinstance(e, dict)):
                    entries.append({title: page})
    return config


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    src = _mathjax_source()
    if src is None:
        log.warning("MathJax not found: install the docs extra (pip install -e '.[docs]'), "
                    "which provides django-static-mathjax")
        return files
    files.append(File.generated(config, MATHJAX, abs_src_path=str(src)))
    more = uncovered_modules(Path(config["docs_dir"]))
    if more:
        body = ["# More modules", "",
                "Modules not yet placed on a page of the API reference (generated when the "
                "site is built)."]
        body += [f"\n::: {m}" for m in more]
        files.append(File.generated(config, MORE_PAGE, content="\n".join(body) + "\n"))
    return files


#: a fence's opening line whose info string carries the docs test's words after the language
TEST_WORDS = re.compile(r"^(?P<open> {0,3}(?:`{3,}|~{3,})[\w+-]+)"
                        r"(?P<words>(?:[ \t]+(?:no-run|no_run|run-by=\S+))+)[ \t]*$", re.M)


def strip_test_words(markdown: str) -> str:
    """``markdown`` with the docs test's words removed from its fences' info strings
    (```` ```bash no-run ```` -> ```` ```bash ````); other info strings are left alone."""
    return TEST_WORDS.sub(r"\g<open>", markdown)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    markdown = strip_test_words(markdown)
    if cli_reference.MARKER in markdown:
        markdown = markdown.replace(cli_reference.MARKER, cli_reference.markdown())
    if LLM_MARKER in markdown:
        docs = Path(config["docs_dir"])
        depth = page.file.src_uri.count("/")
        link = "../" * depth + "llm.md"
        text = (f"Language models (`train-audit --model lm`): [the language-model page]({link})."
                if (docs / "llm.md").is_file() else
                "Language models: `dpaudit train-audit --model lm` (see `dpaudit train-audit "
                "--help`).")
        markdown = markdown.replace(LLM_MARKER, text)
    return markdown
