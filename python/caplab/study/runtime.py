"""A cell's runtime directory, ``{runtime}`` in a study file: where the servers a cell starts keep
their data, whatever directory the study itself is in.

caplab starts PostgreSQL, Postfix, Dovecot, etcd and Patroni as unprivileged users when it runs as
root. Such a user cannot enter a private working directory (``mktemp -d``, anything under
``/root``), so a server's data directory there fails. Each replicate of a cell therefore gets a
directory of its own under a top directory every user may traverse::

    /var/tmp/caplab-run/                         1777 (sticky, as /tmp), root's or ours
      caplab-<pid>-<token>-cell-<N>/             0711, ours: enter, not list
        hardware/                                the cell's volumes (mount points) and devices
        …                                        what the study's commands put in {runtime}

A system makes its own data directory inside (owned by its server user, 0700 for PostgreSQL). The
directory is removed after the replicate's system stops and its hardware is gone — also when the
cell fails or Ctrl-C is pressed; a crashed run's directories are removed by the next run (their
names carry the creating process's pid). Results and reports stay in the study's directory.
``CAPLAB_RUNTIME_DIR`` names another top directory.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
from pydantic import BaseModel

from caplab.profiles.hardware import interrupts_deferred, owner_prefix
from caplab.spec import StudyConfig

PLACEHOLDER = "{runtime}"
RUNTIME_ENV = "CAPLAB_RUNTIME_DIR"
DEFAULT_TOP = Path("/var/tmp/caplab-run")
TOP_MODE = 0o1777
"""Anyone may make a directory in it, and only its owner remove it (as /tmp)."""
CELL_MODE = 0o711
"""The server users pass through a cell's directory to their own data; nobody else lists it."""
STOP_WAIT_S = 5.0
_OWNED = re.compile(r"caplab-(\d+)-[0-9a-f]+-")


class RuntimeDirError(Exception):
    """The runtime directory cannot be made safely; the message says why and what to do."""


def runtime_top() -> Path:
    """The top directory: ``$CAPLAB_RUNTIME_DIR``, or /var/tmp/caplab-run."""
    given = os.environ.get(RUNTIME_ENV)
    return Path(given).absolute() if given else DEFAULT_TOP


def prepare_top(top: Path) -> Path:
    """Makes ``top`` (mode 1777) unless it exists, and checks that it is safe to work in: a real
    directory, root's or ours, not writable by others unless sticky, and (as root) every parent
    open to the server users."""
    try:
        top.mkdir(mode=0o700)
        os.chmod(top, TOP_MODE)
    except FileExistsError:
        pass
    except OSError as e:
        raise RuntimeDirError(
            f"cannot make the runtime directory {top}: {e.strerror} (set {RUNTIME_ENV})"
        ) from e
    st = os.lstat(top)
    if not stat.S_ISDIR(st.st_mode):
        raise RuntimeDirError(
            f"the runtime directory {top} is not a directory: remove it or set {RUNTIME_ENV}"
        )
    if st.st_uid not in (0, os.geteuid()):
        raise RuntimeDirError(
            f"the runtime directory {top} belongs to uid {st.st_uid}, not to root or to us: "
            f"remove it or set {RUNTIME_ENV}"
        )
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not st.st_mode & stat.S_ISVTX:
        raise RuntimeDirError(
            f"the runtime directory {top} is writable by others without the sticky bit "
            f"({stat.filemode(st.st_mode)}): chmod 1777 it or set {RUNTIME_ENV}"
        )
    if os.geteuid() == 0:
        for directory in (*reversed(top.parents), top):
            mode = directory.stat().st_mode
            if not mode & stat.S_IXOTH:
                raise RuntimeDirError(
                    f"the servers' users cannot enter {directory} ({stat.filemode(mode)}), on the way to "
                    f"the runtime directory {top}: set {RUNTIME_ENV} to a directory every user may reach"
                )
    return top


def make_runtime(label: str, top: Path | None = None) -> Path:
    """A new directory for one replicate of a cell, ``caplab-<pid>-<token>-<label>`` (0711)."""
    base = prepare_top(top or runtime_top())
    path = base / f"{owner_prefix()}-{label}"
    path.mkdir(mode=0o700)
    os.chmod(path, CELL_MODE)
    return path


def remove_runtime(path: Path) -> list[str]:
    """Removes a runtime directory and everything in it. Server processes still working in it (a
    stop command that failed) are killed first, since their files are about to go; another
    filesystem mounted inside (a volume whose removal failed) is left alone. Returns what was not
    removed, one line each."""
    problems: list[str] = []
    with interrupts_deferred():
        _kill_processes_in(path)
        if path.is_dir() and not path.is_symlink():
            _remove_tree(path, os.lstat(path).st_dev, problems)
    return problems


@contextlib.contextmanager
def cell_runtime(label: str, top: Path | None = None) -> Iterator[Path]:
    """The replicate's runtime directory for the life of the block, then removed."""
    path = make_runtime(label, top)
    try:
        yield path
    except BaseException as exc:
        problems = remove_runtime(path)
        if problems:  # the cell's own error wins; its cleanup's goes with it
            exc.add_note(f"removing the runtime directory {path}: " + "; ".join(problems))
        raise
    problems = remove_runtime(path)
    if problems:
        raise RuntimeDirError(f"removing the runtime directory {path}: " + "; ".join(problems))


def sweep_runtime(top: Path | None = None) -> list[str]:
    """Removes the runtime directories of runs that no longer run (ours only); one line each."""
    base = top or runtime_top()
    done: list[str] = []
    with contextlib.suppress(OSError):
        for entry in sorted(base.iterdir()):
            m = _OWNED.match(entry.name)
            if m is None or entry.is_symlink() or not entry.is_dir() or entry.lstat().st_uid != os.geteuid():
                continue
            if psutil.pid_exists(int(m.group(1))):
                continue
            problems = remove_runtime(entry)
            left = f" ({'; '.join(problems)})" if problems else ""
            done.append(f"removed runtime directory {entry}{left}")
    return done


def _kill_processes_in(path: Path) -> None:
    inside: list[psutil.Process] = []
    for proc in psutil.process_iter():
        if proc.pid == os.getpid():
            continue
        with contextlib.suppress(psutil.Error, OSError):
            cwd = Path(proc.cwd())
            if cwd == path or path in cwd.parents:
                inside.append(proc)
    for proc in inside:
        with contextlib.suppress(psutil.Error):
            proc.send_signal(signal.SIGKILL)
    deadline = time.monotonic() + STOP_WAIT_S
    while inside and time.monotonic() < deadline:
        inside = [p for p in inside if _running(p)]
        time.sleep(0.05)


def _running(proc: psutil.Process) -> bool:
    """Still holding its files: running and not a zombie (whose parent has yet to reap it)."""
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _remove_tree(directory: Path, device: int, problems: list[str]) -> None:
    """``rm -rf`` that stays on one filesystem and never follows a symbolic link."""
    try:
        entries = list(os.scandir(directory))
    except OSError as e:
        problems.append(f"{directory}: {e.strerror}")
        return
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                if entry.stat(follow_symlinks=False).st_dev != device:
                    problems.append(f"{entry.path} is still mounted")
                    continue
                _remove_tree(Path(entry.path), device, problems)
            else:
                os.unlink(entry.path)
        except FileNotFoundError:
            continue
        except OSError as e:
            problems.append(f"{entry.path}: {e.strerror}")
    try:
        os.rmdir(directory)
    except FileNotFoundError:
        pass
    except OSError as e:
        if not problems:
            problems.append(f"{directory}: {e.strerror}")


def with_runtime(config: StudyConfig, path: Path) -> StudyConfig:
    """The cell's configuration with every ``{runtime}`` filled in: the SUT's commands, pidfiles
    and databases, the target's passfile, the actions, the job — any string of the study."""
    filled = _fill(config, str(path))
    assert isinstance(filled, StudyConfig)
    return filled


def _fill(value: object, path: str) -> object:
    if isinstance(value, str):
        return value.replace(PLACEHOLDER, path) if PLACEHOLDER in value else value
    if isinstance(value, BaseModel):
        updates = {}
        for name in type(value).model_fields:
            old = getattr(value, name)
            new = _fill(old, path)
            if new is not old:
                updates[name] = new
        return value.model_copy(update=updates) if updates else value
    if isinstance(value, list | tuple):
        items = [_fill(v, path) for v in value]
        changed = any(new is not old for new, old in zip(items, value, strict=True))
        return type(value)(items) if changed else value
    if isinstance(value, dict):
        pairs = {k: _fill(v, path) for k, v in value.items()}
        return pairs if any(pairs[k] is not v for k, v in value.items()) else value
    return value
