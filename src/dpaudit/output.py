"""Writing output files: only onto regular files (or new paths), atomically.

Every file dpaudit writes -- audit cards (HTML, PNG), ``report --out``, scores
(``--save-scores``), the zoo's Markdown, Parquet exports of a trial store -- goes through this
module:

* :func:`check_output_target` refuses, with one ValueError naming the path and what it is, a
  target that exists and is not a regular file: a character or block device (``/dev/null``), a
  FIFO, a socket or a directory, also behind a symbolic link (a dangling link is refused too).
  Renaming a file over such a target would replace it -- as root, ``--report /dev/null`` would
  replace ``/dev/null`` for the whole machine.  It also refuses a path that is one of the
  command's inputs (a file read or a trial store opened, :func:`note_input`), so an output never
  replaces an input.  The command line calls it for every output path before any work is done.
* :func:`atomic_output` yields a temporary file beside the target; when the body succeeds the
  file is flushed to disk and renamed into place, after the target is checked again (so a device
  created in the meantime is not replaced either).  A failed write leaves the target untouched
  and no temporary file behind.  A symbolic link to a regular file is written through (the file
  it points to is replaced).  The library's writers check the target's kind
  (:func:`writable_target`); the input check is the command line's.  :func:`write_bytes` /
  :func:`write_text` are the one-call forms.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["check_output_target", "writable_target", "atomic_output", "write_bytes",
           "write_text", "note_input", "reset_inputs", "noted_inputs"]

#: resolved paths of the files read (and trial stores opened) since :func:`reset_inputs`
_INPUTS: dict[str, str] = {}


def note_input(path: str | os.PathLike[str]) -> None:
    """Remember ``path`` as an input of the current command (see :func:`check_output_target`)."""
    try:
        _INPUTS[os.path.realpath(path)] = str(path)
    except (OSError, ValueError):  # pragma: no cover - unresolvable path
        pass


def reset_inputs() -> None:
    """Forget the noted inputs (the command line calls this once per command)."""
    _INPUTS.clear()


def noted_inputs() -> dict[str, str]:
    """The inputs noted so far: resolved path -> path as given."""
    return dict(_INPUTS)


def _kind(mode: int) -> str | None:
    """What a non-regular file is, in words (None for a regular file)."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"  # pragma: no cover - other kinds (doors, ports)


def _refuse(what: str, p: Path, kind: str) -> ValueError:
    return ValueError(f"{what} {p} is {kind}; dpaudit writes only to regular files or new "
                      f"paths -- choose another output path")


def check_output_target(path: str | os.PathLike[str], *inputs: str | os.PathLike[str] | None,
                        what: str = "output") -> Path:
    """The file ``path`` will be written to (a symbolic link resolved), or a ValueError.

    Accepted: a new path (its parent directories are created on write) or an existing regular
    file that is not one of the command's inputs (``inputs`` plus every noted input).  Refused:
    a device, FIFO, socket or directory (also behind a symbolic link), a dangling symbolic link,
    a path whose parent is not a directory, and an input."""
    target = writable_target(path, what=what)
    real = os.path.realpath(target)
    named = {os.path.realpath(i): str(i) for i in inputs if i is not None}
    named.update(_INPUTS)
    if real in named:
        raise ValueError(f"{what} {path} is the input {named[real]}; refusing to overwrite an "
                         f"input -- choose another output path")
    return target


def writable_target(path: str | os.PathLike[str], *, what: str = "output") -> Path:
    """:func:`check_output_target` without the input check: the file a write to ``path``
    replaces (a symbolic link resolved), when it is new or a regular file; else a ValueError."""
    if isinstance(path, bytes) or not isinstance(path, (str, os.PathLike)):
        raise ValueError(f"{what} path must be a file path, got {type(path).__name__}")
    p = Path(path)
    if str(path) == "":
        raise ValueError(f"{what} path must not be empty")
    try:
        lst = os.lstat(p)
    except (FileNotFoundError, NotADirectoryError):  # new (the parent is checked below)
        lst = None
    except OSError as e:
        raise ValueError(f"{what} {p} cannot be checked ({e.strerror or e})") from None
    target = p
    if lst is not None:
        if stat.S_ISLNK(lst.st_mode):
            try:
                st = os.stat(p)
            except FileNotFoundError:
                raise _refuse(what, p, "a dangling symbolic link") from None
            except OSError as e:
                raise ValueError(f"{what} {p} cannot be checked ({e.strerror or e})") from None
            kind = _kind(st.st_mode)
            if kind is not None:
                raise _refuse(what, p, f"a symbolic link to {kind}")
            target = Path(os.path.realpath(p))
        else:
            kind = _kind(lst.st_mode)
            if kind is not None:
                raise _refuse(what, p, kind)
    _check_parent(target, what)
    return target


def _check_parent(target: Path, what: str) -> None:
    """The nearest existing ancestor of ``target`` must be a directory."""
    for anc in target.absolute().parents:
        try:
            st = os.stat(anc)
        except FileNotFoundError:
            continue
        except OSError as e:
            raise ValueError(f"{what} {target}: directory {anc} cannot be checked "
                             f"({e.strerror or e})") from None
        if not stat.S_ISDIR(st.st_mode):
            raise ValueError(f"{what} {target}: {anc} is not a directory")
        return


def _default_mode(existing: Path) -> int:
    """Permissions of the written file: those of the file it replaces, else 0o666 & ~umask."""
    try:
        return stat.S_IMODE(os.stat(existing).st_mode)
    except OSError:
        mask = os.umask(0o022)
        os.umask(mask)
        return 0o666 & ~mask


@contextmanager
def atomic_output(path: str | os.PathLike[str], *, what: str = "output",
                  suffix: str | None = None) -> Iterator[Path]:
    """A temporary path beside ``path`` to write to; renamed onto ``path`` when the body
    succeeds (see module).  ``suffix`` (default: that of ``path``) ends the temporary name, for
    writers that pick the format from it (matplotlib, pyarrow)."""
    target = writable_target(path, what=what)
    target.parent.mkdir(parents=True, exist_ok=True)
    sfx = target.suffix if suffix is None else suffix
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=f".tmp{sfx}",
                                    dir=target.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        with tmp.open("rb+") as fh:
            os.fsync(fh.fileno())
        os.chmod(tmp, _default_mode(target))
        # checked again just before the rename: a device put there meanwhile stays untouched
        writable_target(target, what=what)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(target.parent)


def _fsync_dir(d: Path) -> None:
    try:
        fd = os.open(d, os.O_RDONLY)
    except OSError:  # pragma: no cover - e.g. platforms without directory handles
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def write_bytes(path: str | os.PathLike[str], data: bytes, *, what: str = "output") -> Path:
    """Write ``data`` to ``path`` atomically (see :func:`atomic_output`); return the path."""
    with atomic_output(path, what=what) as tmp:
        tmp.write_bytes(data)
    return Path(path)


def write_text(path: str | os.PathLike[str], text: str, *, what: str = "output",
               encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` atomically (see :func:`atomic_output`); return the path."""
    return write_bytes(path, text.encode(encoding), what=what)
