"""What a trial store's audit *is*: fingerprints of a game's code and parameters, and the
library versions that ran it.

A trial store must never mix trials of two versions of a mechanism: a user who fixes a leaking
mechanism and resumes would otherwise audit the old trials with the new ones.  A description by
``module.qualname`` does not see an edited function body, a changed ``functools.partial``
argument or an instance attribute; this module does.

:func:`fingerprint` walks a callable and everything it reaches, into two SHA-256 digests:

* ``code`` -- the source text of every function and class of the user's code that it reaches
  (the function itself, the ``__call__`` of a callable instance, the function of a partial or
  bound method, and -- recursively, to :data:`MAX_DEPTH` levels -- the functions and classes it
  refers to through its global names, closure cells and default arguments).  Where no source
  is available (code built with ``exec``) the bytecode, constants and names stand in for it;
* ``state`` -- the values it reaches: partial arguments and keywords, instance attributes
  (``__dict__`` and ``__slots__``), closure cells, defaults, referenced module-level values
  (NumPy arrays by dtype, shape and bytes).

Library code (a function or class defined in the standard library or in an installed
package, outside the user's tree) is named, not read: ``module.qualname`` plus the version of
its distribution, so that an upgraded library is a version change (:func:`versions`), not a
code change.  Memory addresses never enter a digest, so the fingerprint of the same callable is
the same in every process.  The walk is bounded (depth and node count) and cycle-safe.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import inspect
import marshal
import os
import sys
import sysconfig
import types
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Fingerprint", "fingerprint", "game_identity", "versions", "describe_changes",
           "declared_identity", "check_env_names", "coverage_note", "MAX_DEPTH"]

#: how many levels of references (globals, closures, attributes) are followed
MAX_DEPTH = 6
#: at most this many objects are visited per fingerprint (a marker records the cut)
MAX_NODES = 20_000


@dataclass(frozen=True)
class Fingerprint:
    """SHA-256 digests (first 16 hex digits) of the code and of the values a callable reaches."""

    code: str
    state: str


def _library_roots() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    roots = {os.path.realpath(paths[k]) for k in ("stdlib", "platstdlib", "purelib", "platlib")
             if paths.get(k)}
    roots.add(os.path.realpath(sys.prefix))
    roots.add(os.path.realpath(sys.base_prefix))
    return tuple(sorted(r + os.sep for r in roots))


_LIB_ROOTS = _library_roots()


def _is_library(obj: Any) -> bool:
    """Defined in the standard library, an installed package or C: named, not read."""
    mod = sys.modules.get(getattr(obj, "__module__", None) or "")
    if mod is None:
        return getattr(obj, "__code__", None) is None and not isinstance(obj, type)
    path = getattr(mod, "__file__", None)
    if path is None:  # builtins, frozen modules
        return mod.__name__ in sys.builtin_module_names or mod.__name__ != "__main__"
    return _is_library_file(path)


@functools.lru_cache(maxsize=4096)
def _is_library_file(path: str) -> bool:
    """A module file under the standard library's or an installed package's directory
    (resolved once per path: every visited function asks again)."""
    return os.path.realpath(path).startswith(_LIB_ROOTS)


@functools.lru_cache(maxsize=256)
def package_version(module: str) -> str | None:
    """Version of the top-level package of ``module``: its ``__version__``, else the version
    of the distribution of the same name; None for a module outside any distribution."""
    top = module.partition(".")[0]
    if not top or top == "__main__":
        return None
    mod = sys.modules.get(top)
    ver = getattr(mod, "__version__", None)
    if isinstance(ver, str):
        return f"{top} {ver}"
    try:  # a distribution named as its package (scanning every distribution is slow)
        from importlib import metadata

        return f"{top} {metadata.version(top)}"
    except Exception:  # noqa: BLE001 - no such distribution, broken metadata
        return None


def _code_names(code: types.CodeType) -> list[str]:
    """Global names a code object (and the code objects nested in it) may refer to."""
    names = list(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names += _code_names(c)
    return names


def _bytecode(code: types.CodeType) -> bytes:
    """Bytecode, constants and names (no file names or line numbers)."""
    consts = tuple(_bytecode(c) if isinstance(c, types.CodeType) else repr(c)
                   for c in code.co_consts)
    return marshal.dumps((code.co_code, consts, code.co_names, code.co_varnames))


#: source text already read, per function or class object (hashed by identity: an equal code
#: object from an edited file is another key): a fingerprint reads the same definitions again
#: for every audit of a process (a zoo's or a test's hundreds of audits spent a third of their
#: time in ``inspect``).  An entry is the source of the object as first read, dropped with it.
_SOURCES: weakref.WeakKeyDictionary[Any, bytes | None] = weakref.WeakKeyDictionary()


def _source(obj: Any) -> bytes | None:
    key = obj
    try:
        return _SOURCES[key]
    except (KeyError, TypeError):
        pass
    try:
        src: bytes | None = inspect.getsource(obj).encode()
    except (OSError, TypeError):
        src = None
    try:
        _SOURCES[key] = src
    except TypeError:  # not weakly referenceable: read each time
        pass
    return src


class _Walker:
    def __init__(self) -> None:
        self.code = hashlib.sha256()
        self.state = hashlib.sha256()
        self.seen: dict[int, int] = {}
        self.keep: list[Any] = []  # keeps visited objects alive (ids stay unique)
        self.nodes = 0

    def _tag(self, h: Any, *parts: object) -> None:
        for p in parts:
            b = p if isinstance(p, bytes) else str(p).encode()
            h.update(len(b).to_bytes(8, "little"))
            h.update(b)

    def _lib(self, obj: Any) -> None:
        mod = getattr(obj, "__module__", None) or type(obj).__module__
        name = getattr(obj, "__qualname__", None) or type(obj).__qualname__
        self._tag(self.code, "lib", mod, name, package_version(str(mod)) or "")

    def visit(self, obj: Any, depth: int) -> None:
        s = self.state
        if obj is None or isinstance(obj, (bool, int, float, complex, str, bytes)):
            self._tag(s, type(obj).__name__, repr(obj))
            return
        if isinstance(obj, np.generic):
            self._tag(s, "np", obj.dtype.str, repr(obj.item()))
            return
        key = id(obj)
        if key in self.seen:
            self._tag(s, "ref", self.seen[key])
            return
        self.nodes += 1
        if depth > MAX_DEPTH or self.nodes > MAX_NODES:
            self._tag(s, "cut", type(obj).__qualname__)
            return
        self.seen[key] = len(self.seen)
        self.keep.append(obj)
        d = depth + 1
        if isinstance(obj, np.ndarray):
            self._tag(s, "ndarray", obj.dtype.str, obj.shape)
            if obj.dtype.hasobject:
                for x in obj.ravel().tolist()[:10_000]:
                    self.visit(x, d)
            else:
                s.update(np.ascontiguousarray(obj).tobytes())
        elif isinstance(obj, (list, tuple)):
            self._tag(s, type(obj).__name__, len(obj))
            for x in obj:
                self.visit(x, d)
        elif isinstance(obj, (set, frozenset)):
            self._tag(s, type(obj).__name__, len(obj))
            for x in sorted(obj, key=repr):
                self.visit(x, d)
        elif isinstance(obj, Mapping) and type(obj) in (dict, types.MappingProxyType):
            self._tag(s, "dict", len(obj))
            for k in sorted(obj, key=repr):
                self.visit(k, d)
                self.visit(obj[k], d)
        elif isinstance(obj, types.ModuleType):
            self._tag(s, "module", obj.__name__, package_version(obj.__name__) or "")
        elif isinstance(obj, functools.partial):
            self._tag(s, "partial")
            self.visit(obj.func, d)
            self.visit(obj.args, d)
            self.visit(obj.keywords, d)
        elif isinstance(obj, types.MethodType):
            self._tag(s, "method")
            self.visit(obj.__func__, d)
            self.visit(obj.__self__, d)
        elif isinstance(obj, (staticmethod, classmethod)):
            self.visit(obj.__func__, d)
        elif isinstance(obj, property):
            for f in (obj.fget, obj.fset, obj.fdel):
                self.visit(f, d)
        elif isinstance(obj, types.FunctionType):
            self._function(obj, d, with_source=True)
        elif isinstance(obj, (types.BuiltinFunctionType, types.BuiltinMethodType)):
            self._lib(obj)
            owner = getattr(obj, "__self__", None)
            if owner is not None and not isinstance(owner, types.ModuleType):
                self.visit(owner, d)
        elif isinstance(obj, type):
            self._class(obj, d)
        else:
            self._instance(obj, d)

    def _function(self, fn: types.FunctionType, d: int, *, with_source: bool) -> None:
        if _is_library(fn):
            self._lib(fn)
            return
        if with_source:
            src = _source(fn)
            self._tag(self.code, "def", fn.__module__, fn.__qualname__)
            self.code.update(src if src is not None else _bytecode(fn.__code__))
        s = self.state
        self._tag(s, "defaults")
        self.visit(fn.__defaults__, d)
        self.visit(fn.__kwdefaults__, d)
        self._tag(s, "closure")
        for cell in fn.__closure__ or ():
            try:
                self.visit(cell.cell_contents, d)
            except ValueError:  # an empty cell
                self._tag(s, "empty")
        g = fn.__globals__
        self._tag(s, "globals")
        for name in sorted(set(_code_names(fn.__code__))):
            if name in g:
                self._tag(s, name)
                self.visit(g[name], d)

    def _class(self, cls: type, d: int) -> None:
        if _is_library(cls):
            self._lib(cls)
            return
        src = _source(cls)
        self._tag(self.code, "class", cls.__module__, cls.__qualname__)
        if src is not None:
            self.code.update(src)
        for base in cls.__bases__:
            if base is not object:
                self.visit(base, d)
        for name, attr in sorted(vars(cls).items()):
            if name.startswith("__") and name.endswith("__") and not callable(attr):
                continue  # __dict__, __weakref__, __doc__, dataclass bookkeeping, ...
            raw = attr.__func__ if isinstance(attr, (staticmethod, classmethod)) else attr
            if isinstance(raw, types.FunctionType):
                # the class source already holds the body; without it, hash the bytecode
                self._tag(self.code, name)
                if src is None and not _is_library(raw):
                    self.code.update(_bytecode(raw.__code__))
                self._function(raw, d, with_source=False)
            elif isinstance(attr, property):
                self.visit(attr, d)
            elif not callable(attr):
                self._tag(self.state, name)
                self.visit(attr, d)

    def _instance(self, obj: Any, d: int) -> None:
        cls = type(obj)
        self.visit(cls, d)
        self._tag(self.state, "instance")
        if dataclasses.is_dataclass(obj):
            for f in dataclasses.fields(obj):
                self._tag(self.state, f.name)
                self.visit(getattr(obj, f.name, None), d)
        attrs = getattr(obj, "__dict__", None)
        if isinstance(attrs, dict):
            self.visit(dict(attrs), d)
        for klass in cls.__mro__:
            for slot in getattr(klass, "__slots__", ()) or ():
                if isinstance(slot, str) and slot not in ("__dict__", "__weakref__"):
                    self._tag(self.state, slot)
                    self.visit(getattr(obj, slot, None), d)


def fingerprint(obj: Any) -> Fingerprint:
    """The code and state digests of ``obj`` (see module)."""
    w = _Walker()
    w.visit(obj, 0)
    return Fingerprint(w.code.hexdigest()[:16], w.state.hexdigest()[:16])


def _named_callables(game: Any) -> dict[str, Any]:
    if dataclasses.is_dataclass(game) and not isinstance(game, type):
        items = {f.name: getattr(game, f.name, None) for f in dataclasses.fields(game)}
    else:
        items = dict(getattr(game, "__dict__", {}))
    return {k: v for k, v in items.items() if callable(v) and not k.startswith("_")}


def game_identity(game: Any) -> dict[str, dict[str, str]]:
    """``{part: {"name", "code", "state"}}`` for each callable of ``game`` (e.g. mechanism,
    neighbours, score) and for the game's own class (``"game"``)."""
    from dpaudit.engine.game import describe_callable

    out: dict[str, dict[str, str]] = {}
    for part, fn in sorted(_named_callables(game).items()):
        fp = fingerprint(fn)
        out[part] = {"name": describe_callable(fn), "code": fp.code, "state": fp.state}
    fp = fingerprint(type(game))
    cls = type(game)
    out["game"] = {"name": f"{cls.__module__}.{cls.__qualname__}", "code": fp.code,
                   "state": fp.state}
    return out


def versions(game: Any) -> dict[str, str]:
    """Python, dpaudit, NumPy and the distribution of each of the game's callables' top-level
    packages (where it has one)."""
    from dpaudit import __version__

    out = {"python": f"{sys.version_info.major}.{sys.version_info.minor}",
           "dpaudit": __version__, "numpy": np.__version__}
    for fn in _named_callables(game).values():
        target = fn
        while isinstance(target, functools.partial):
            target = target.func
        mod = getattr(target, "__module__", None) or type(target).__module__
        ver = package_version(str(mod))
        if ver is not None:
            name, _, v = ver.partition(" ")
            out.setdefault(name, v)
    return out


def check_env_names(names: Any) -> tuple[str, ...]:
    """Environment variable names (``--identity-env``): non-empty, no ``=`` or NUL; sorted,
    each once."""
    if isinstance(names, str):
        names = (names,)
    out = set()
    for n in names:
        if not isinstance(n, str) or not n or "=" in n or "\x00" in n:
            raise ValueError(f"identity_env (--identity-env) must name environment variables "
                             f"(non-empty, without '='), got {n!r}")
        out.add(n)
    return tuple(sorted(out))


def _digest(value: str | None) -> str | None:
    """SHA-256 (16 hex digits) of a declared value: stores compare it, never keep it."""
    return None if value is None else hashlib.sha256(value.encode()).hexdigest()[:16]


def declared_identity(game: Any, env: Any = ()) -> dict[str, Any]:
    """What the user declares about inputs the code cannot show (a mechanism that reads the
    environment, files or clocks at call time): the game's ``version`` string, if it has one,
    and a digest of each environment variable named in ``env`` (None when unset).  Empty when
    nothing is declared (the store's audit id is then what it always was)."""
    out: dict[str, Any] = {}
    version = getattr(game, "version", None)
    if version is not None:
        out["version"] = str(version)
    names = check_env_names(env)
    if names:
        out["env"] = {n: _digest(os.environ.get(n)) for n in names}
    return out


def coverage_note(config: Mapping[str, Any]) -> str:
    """One sentence: what a store's identity covers, for ``--resume``."""
    decl = config.get("declared") or {}
    parts = ["the code and parameters of the mechanism, neighbours and score (fingerprints) "
             "and the library versions"]
    if "version" in decl:
        parts.append(f"the declared version {decl['version']!r}")
    if decl.get("env"):
        parts.append(f"the environment variables {', '.join(decl['env'])}")
    note = "resumed trials are reused only if these are unchanged: " + "; ".join(parts)
    if not decl:
        note += (". Not covered: what the mechanism reads at call time (environment, files, "
                 "clocks); declare it with --identity-env VAR or a version string on the "
                 "audit object (BlackBoxAudit(..., version=...))")
    return note


def _describe_declared(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    od, nd = old.get("declared") or {}, new.get("declared") or {}
    if od.get("version") != nd.get("version"):
        out.append(f"the declared version changed ({od.get('version')!r} -> "
                   f"{nd.get('version')!r})")
    oe, ne = od.get("env") or {}, nd.get("env") or {}
    for name in sorted(set(oe) | set(ne)):
        if name not in oe or name not in ne:
            out.append(f"environment variable {name} is declared (--identity-env) in only "
                       f"one of the runs")
        elif oe[name] != ne[name]:
            state = "unset" if ne[name] is None else ("set" if oe[name] is None else "changed")
            out.append(f"environment variable {name} {'was ' if state != 'changed' else ''}"
                       f"{state}")
    return out


_PART = {"mechanism": "the mechanism", "neighbours": "the neighbours function",
         "score": "the score function", "sampler": "the sampler", "game": "the game class"}


def describe_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """Sentences naming what differs between two stored configurations' identities and
    versions (empty when neither changed)."""
    out: list[str] = []
    oi, ni = old.get("identity"), new.get("identity")
    if oi is None and ni is not None:
        out.append("the store was written by a dpaudit that recorded no code fingerprints")
    elif isinstance(oi, Mapping) and isinstance(ni, Mapping):
        for part in sorted(set(oi) | set(ni)):
            a, b = oi.get(part), ni.get(part)
            who = _PART.get(part, f"the {part}")
            if not isinstance(a, Mapping) or not isinstance(b, Mapping):
                out.append(f"{who} was {'added' if a is None else 'removed'}")
                continue
            name = b.get("name")
            label = name if a.get("name") == name else f"{a.get('name')} -> {name}"
            if a.get("code") != b.get("code"):
                out.append(f"{who}'s code changed ({label})")
            elif a.get("state") != b.get("state"):
                out.append(f"{who}'s parameters changed ({label}: partial arguments, "
                           f"attributes, defaults, closure or module-level values)")
            elif a.get("name") != name:
                out.append(f"{who} changed ({label})")
    out += _describe_declared(old, new)
    ov, nv = old.get("versions"), new.get("versions")
    if isinstance(ov, Mapping) and isinstance(nv, Mapping):
        for lib in sorted(set(ov) | set(nv)):
            if ov.get(lib) != nv.get(lib):
                out.append(f"{lib} version changed ({ov.get(lib)} -> {nv.get(lib)})")
    return out
