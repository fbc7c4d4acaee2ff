"""FailingDir: a log dir whose disk fails, for unit tests (no root, no loop device).

    with FailingDir(root, errno.EROFS) as disk:     # nothing fails yet
        disk.fail()                                  # from now on...
        ...                                          # writes under root raise OSError(EROFS)
        disk.heal()

While failing, every write-side call of the ``os`` module (and ``open`` for writing)
on a path under ``root`` -- or on a descriptor whose file is under it -- raises
``OSError(errno)``: ``write``, ``pwrite``, ``pwritev``, ``fsync``, ``ftruncate``, ``truncate``,
``posix_fallocate``, ``open`` with a write flag, ``replace``, ``rename``,
``unlink``/``remove``, ``mkdir``, ``rmdir``. With ``errno.ENOSPC`` only the calls
that need space fail (``write``, ``pwrite``, ``pwritev``, ``posix_fallocate``, a new
file), as on a full disk; ``short_write`` makes the first failing ``pwrite`` or
``pwritev`` write half of its bytes first, as a full disk does mid-batch. Reads still work, as on a
failed ext4. Stores into an existing mmap'd page cannot be stopped (neither can
they on a real disk: they fail at msync/writeback). ``calls`` counts what was
refused, so a test can check that nothing touched the disk.
"""

from __future__ import annotations

import builtins
import errno as errno_mod
import os
from collections import Counter
from pathlib import Path
from types import TracebackType
from typing import Any, Callable

_READLINK = os.readlink
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_SPACE_CALLS = {"write", "pwrite", "pwritev", "posix_fallocate", "create"}


class FailingDir:
    def __init__(self, root: str | Path, errno: int = errno_mod.EROFS, *,
                 short_write: bool = False) -> None:
        self.root = os.path.realpath(root)
        self.errno = errno
        self.short_write = short_write
        self.failing = False
        self.calls: Counter[str] = Counter()
        self._saved: dict[tuple[Any, str], Any] = {}

    # -- switching -----------------------------------------------------------------------

    def fail(self) -> FailingDir:
        self.failing = True
        return self

    def heal(self) -> None:
        self.failing = False

    def __enter__(self) -> FailingDir:
        self._patch()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        for (owner, name), fn in self._saved.items():
            setattr(owner, name, fn)
        self._saved.clear()

    # -- what is under root ----------------------------------------------------------------

    def _under_path(self, path: Any, dir_fd: int | None = None) -> bool:
        if isinstance(path, int):
            return self._under_fd(path)
        text = os.fsdecode(path)
        if dir_fd is not None and not os.path.isabs(text):
            try:
                text = os.path.join(_READLINK(f"/proc/self/fd/{dir_fd}"), text)
            except OSError:
                return False
        full = os.path.realpath(os.path.join(os.getcwd(), text))
        return full == self.root or full.startswith(self.root + os.sep)

    def _under_fd(self, fd: int) -> bool:
        try:
            target = _READLINK(f"/proc/self/fd/{fd}")
        except OSError:
            return False
        return target == self.root or target.startswith(self.root + os.sep)

    def _refuse(self, call: str, under: bool) -> None:
        if not (self.failing and under):
            return
        if self.errno == errno_mod.ENOSPC and call not in _SPACE_CALLS:
            return
        self.calls[call] += 1
        raise OSError(self.errno, f"{os.strerror(self.errno)} (FailingDir {call})")

    # -- patching ----------------------------------------------------------------------

    def _swap(self, owner: Any, name: str, make: Callable[[Any], Any]) -> None:
        original = getattr(owner, name)
        self._saved[(owner, name)] = original
        setattr(owner, name, make(original))

    def _patch(self) -> None:
        def on_fd(call: str) -> Callable[[Any], Any]:
            def make(original: Any) -> Any:
                def patched(fd: int, *args: Any, **kw: Any) -> Any:
                    self._refuse(call, self._under_fd(fd))
                    return original(fd, *args, **kw)
                return patched
            return make

        def on_path(call: str) -> Callable[[Any], Any]:
            def make(original: Any) -> Any:
                def patched(path: Any, *args: Any, **kw: Any) -> Any:
                    self._refuse(call, self._under_path(path, kw.get("dir_fd")))
                    return original(path, *args, **kw)
                return patched
            return make

        def on_two_paths(call: str) -> Callable[[Any], Any]:
            def make(original: Any) -> Any:
                def patched(src: Any, dst: Any, *args: Any, **kw: Any) -> Any:
                    self._refuse(call, self._under_path(src) or self._under_path(dst))
                    return original(src, dst, *args, **kw)
                return patched
            return make

        def pwrite(original: Any) -> Any:
            def patched(fd: int, data: Any, offset: int) -> int:
                if self.failing and self.short_write and self._under_fd(fd) and len(data) > 1:
                    self.short_write = False            # half of it lands, then the disk is full
                    return int(original(fd, memoryview(data)[:len(data) // 2], offset))
                self._refuse("pwrite", self._under_fd(fd))
                return int(original(fd, data, offset))
            return patched

        def pwritev(original: Any) -> Any:
            def patched(fd: int, buffers: Any, offset: int) -> int:
                whole = b"".join(bytes(memoryview(b)) for b in buffers)
                if self.failing and self.short_write and self._under_fd(fd) and len(whole) > 1:
                    self.short_write = False            # half of it lands, then the disk is full
                    return int(original(fd, [whole[:len(whole) // 2]], offset))
                self._refuse("pwritev", self._under_fd(fd))
                return int(original(fd, buffers, offset))
            return patched

        def os_open(original: Any) -> Any:
            def patched(path: Any, flags: int, *args: Any, **kw: Any) -> int:
                if flags & _WRITE_FLAGS:
                    under = self._under_path(path, kw.get("dir_fd"))
                    new = isinstance(path, (str, bytes, Path)) and not os.path.exists(path)
                    self._refuse("create" if new and flags & os.O_CREAT else "open", under)
                return int(original(path, flags, *args, **kw))
            return patched

        def builtin_open(original: Any) -> Any:
            def patched(file: Any, mode: str = "r", *args: Any, **kw: Any) -> Any:
                if any(c in mode for c in "wax+"):
                    under = self._under_path(file)
                    new = isinstance(file, (str, bytes, Path)) and not os.path.exists(file)
                    self._refuse("create" if new else "open", under)
                return original(file, mode, *args, **kw)
            return patched

        for name in ("write", "fsync", "ftruncate", "posix_fallocate"):
            self._swap(os, name, on_fd(name))
        self._swap(os, "pwrite", pwrite)
        self._swap(os, "pwritev", pwritev)
        for name in ("truncate", "unlink", "remove", "mkdir", "rmdir"):
            self._swap(os, name, on_path(name))
        for name in ("replace", "rename"):
            self._swap(os, name, on_two_paths(name))
        self._swap(os, "open", os_open)
        self._swap(builtins, "open", builtin_open)
