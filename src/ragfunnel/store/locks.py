"""Advisory file locks (flock) for writers and readers of an index or a collection. The kernel drops a lock when
its holder dies, so a process killed with `kill -9` never leaves one held."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class LockHeld(Exception):
    """`file_lock(..., wait=False)` found the lock held by another process."""


@contextmanager
def file_lock(file: Path, exclusive: bool, wait: bool = True) -> Iterator[None]:
    """Hold `file` locked (exclusive for a writer, shared for a reader) for the `with` block. `wait=False` raises
    `LockHeld` instead of waiting. Where the lock file cannot be made (a read-only copy) there is nobody to wait for."""
    try:
        fd = os.open(file, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        yield
        return
    try:
        mode = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
        try:
            fcntl.flock(fd, mode if wait else mode | fcntl.LOCK_NB)
        except BlockingIOError:
            raise LockHeld(str(file)) from None
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock
