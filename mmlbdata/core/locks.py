"""Inter-process locks that leave nothing behind in the user's folder.

Two ``mmlb build`` runs into one folder must never mix their shards of a config, and parallel
configs share one README. A lock is an ``flock`` on a hidden file next to what it guards; the
holder deletes the file when it is done, so a finished build (successful or not) leaves no
``*.lock`` file. Deleting a lock file is only safe with the inode check below: a waiter that
opened the file before it was deleted must notice that it locked an orphan and start again.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import sys
import time
from pathlib import Path
from typing import Iterator, Optional

POLL_SECONDS = 0.2


def _try_lock(path: Path) -> Optional[int]:
    """A descriptor of ``path`` locked exclusively, or None if another process holds it."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    try:
        same = os.stat(path).st_ino == os.fstat(fd).st_ino
    except FileNotFoundError:  # the previous holder deleted it after we opened it
        same = False
    if not same:
        os.close(fd)
        return None
    return fd


@contextlib.contextmanager
def hold(path: os.PathLike, *, what: str = "") -> Iterator[None]:
    """Hold the lock ``path`` (created, then deleted on release); waits for another holder.

    ``what`` is said once on stderr when the lock is busy, so a waiting build is not a mystery.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    told = False
    while (fd := _try_lock(path)) is None:
        if what and not told:
            print(f"waiting: {what} (lock {path})", file=sys.stderr)
            told = True
        time.sleep(POLL_SECONDS)
    try:
        yield
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # still ours: waiters re-check the inode after locking
        os.close(fd)


def is_held(path: os.PathLike) -> bool:
    """Whether another process holds the lock ``path`` now (a file left by a killed holder is
    not held: the kernel dropped its ``flock``). Probes without creating or deleting anything."""
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing drops our probe's lock
    return False
