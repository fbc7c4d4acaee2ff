"""Real disk faults for log dirs: a small ext4 file system on a loop device.

    reason = disk_skip_reason()          # None, or why it cannot run here (not root, ...)
    with LoopDisk(tmp / "mnt", tmp / "img", size_mb=64) as disk:
        ...                              # a log dir under disk.mount_point
        disk.fill()                      # writes now fail with ENOSPC (fill(leave_kb=64):
                                         # the next 64 KB still fit)
        disk.unfill()                    # space again (repairs first if it went read-only)
        disk.fail()                      # the fs errors out: EROFS from now on
        disk.repair()                    # umount, e2fsck -fy, mount again
    # closed: unmounted, loop device detached, image deleted

How the faults look to a process writing there:

* ``fill``: a filler file takes every free block (``filler`` under the mount
  point, kept until ``unfill``). A later write/pwrite that needs a new block fails
  with ENOSPC (a short write first when part of it fits); creating a file may
  still work while free inodes last, but writing into it fails. Blocks already
  allocated (an index page written before) can still be rewritten.
* ``fail``: the image is mounted ``errors=remount-ro`` (``losetup`` then ``mount``,
  the same as ``mount -o loop,errors=remount-ro`` but with the device's name
  known); writing ``test`` to ``/sys/fs/ext4/<loopN>/trigger_fs_error`` makes ext4
  report an error, which aborts the journal and makes the fs read-only (since
  Linux 6.6 by shutting it down: ``emergency_ro`` in the mount options, no
  read-only flag in statvfs): every later write, fsync, msync of a dirty map and
  new file fails with EROFS, also through descriptors opened before. Reads keep
  working, data never written back is lost. A disk dying under a broker.
* ``repair``: unmount (lazily if busy), ``e2fsck -fy`` (exit codes 0-2 are
  "clean" or "fixed"), mount again read-write. Files a process still holds open
  on the old mount stay on it (lazy unmount), so the broker must be stopped first.

Mount namespaces. A process that unshares its mount namespace while the disk is
mounted (``ip netns exec`` does, for every command it runs) gets a copy of the
mount, and that copy keeps the file system alive after our ``umount``: the loop
device stays busy and e2fsck refuses it. So the mount point is first bind-mounted
onto itself and made *shared*, and the file system mounted on that: ``ip netns
exec`` turns the copies into slaves, and an umount under a shared parent
propagates to them. Copies made private (``unshare -m``) still hold it; then
``repair`` waits a little, and if the device is still busy it detaches it (it
goes when the last holder does: autoclear) and checks and mounts the image
through a fresh loop device (``os.sync`` before each umount, so the stale copy
has nothing to write).

Every action is logged with a timestamp (``LoopDisk.log``, and the ``disk_faults``
logger), so a test failure shows what the disk went through and when.

Cleanup (``close``, idempotent, run by ``__exit__`` whatever happened): unmount
(``umount``, then ``umount -l`` as a fallback) the file system and the bind
mount under it, detach the loop device (``losetup -d``), delete the image. Nothing is left behind even after a failed
test; a process killed with SIGKILL leaves a mount, which ``losetup -a`` and
``findmnt`` show (the image file name starts with ``pybroker-disk-``).
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
import subprocess
import time
import uuid
from pathlib import Path
from types import TracebackType

log = logging.getLogger("disk_faults")

FILLER = "filler"
TOOLS = ("losetup", "mkfs.ext4", "e2fsck", "mount", "umount")
_CHUNK = 1 << 20


def _run(argv: list[str], check: bool = True,
         timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if check and result.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited with {result.returncode}: "
                           f"{result.stderr.strip() or result.stdout.strip()}")
    return result


def disk_skip_reason() -> str | None:
    """Why loop-device disks cannot be used here, or None: not root, a tool
    missing, or a trial loop mount fails (e.g. no loop devices in a container)."""
    if os.geteuid() != 0:
        return "loop-mounted disks need root"
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        return f"missing tools: {', '.join(missing)}"
    if not Path("/sys/fs/ext4").is_dir():
        return "no ext4 in this kernel (/sys/fs/ext4 is missing)"
    import tempfile
    with tempfile.TemporaryDirectory(prefix="pybroker-disk-probe-") as tmp:
        try:
            with LoopDisk(Path(tmp) / "mnt", Path(tmp), size_mb=8, quiet=True):
                pass
        except (OSError, RuntimeError, subprocess.SubprocessError) as e:
            return f"a loop mount fails here: {e}"
    return None


class LoopDisk:
    """An ext4 image of ``size_mb`` in ``image_dir``, loop-mounted at
    ``mount_point`` with ``errors=remount-ro``; see the module docstring."""

    def __init__(self, mount_point: Path, image_dir: Path, size_mb: int = 64, *,
                 quiet: bool = False) -> None:
        self.mount_point = Path(mount_point)
        self.image_dir = Path(image_dir)
        self.size_mb = size_mb
        self.image = self.image_dir / f"pybroker-disk-{uuid.uuid4().hex[:8]}.img"
        self.device: str | None = None          # /dev/loopN while attached
        self.mounted = False
        self._bound = False                     # mount_point bind-mounted onto itself
        self.log: list[str] = []
        self._quiet = quiet
        self._t0 = time.monotonic()
        self._closed = False
        self._open()

    # -- lifecycle -----------------------------------------------------------------------

    def _note(self, what: str) -> None:
        line = f"[{time.strftime('%H:%M:%S')} +{time.monotonic() - self._t0:7.3f}s] " \
               f"{self.mount_point}: {what}"
        self.log.append(line)
        if not self._quiet:
            log.info("%s", line)

    def _open(self) -> None:
        try:
            self.image_dir.mkdir(parents=True, exist_ok=True)
            self.mount_point.mkdir(parents=True, exist_ok=True)
            with open(self.image, "wb") as f:
                f.truncate(self.size_mb << 20)
            _run(["mkfs.ext4", "-q", "-F", str(self.image)])
            self.device = _run(["losetup", "--find", "--show", str(self.image)]).stdout.strip()
            self._note(f"image {self.image} ({self.size_mb} MB) on {self.device}")
            _run(["mount", "--bind", str(self.mount_point), str(self.mount_point)])
            self._bound = True
            _run(["mount", "--make-shared", str(self.mount_point)])
            self._mount()
        except BaseException:
            self.close()
            raise

    def _mount(self) -> None:
        assert self.device is not None
        _run(["mount", "-t", "ext4", "-o", "errors=remount-ro", self.device,
              str(self.mount_point)])
        self.mounted = True
        self._note(f"mounted {self.device} (errors=remount-ro)")

    def _device_busy(self) -> bool:
        """Whether something still holds the loop device (a mount anywhere)."""
        assert self.device is not None
        try:
            fd = os.open(self.device, os.O_RDONLY | os.O_EXCL)
        except OSError as e:
            if e.errno == errno.EBUSY:
                return True
            raise
        os.close(fd)
        return False

    def _free_device(self, wait_s: float = 5.0) -> None:
        """After umount: wait for the device to be free; still busy (a private copy of
        the mount in another mount namespace), move to a fresh loop device."""
        deadline = time.monotonic() + wait_s
        while self._device_busy():
            if time.monotonic() > deadline:
                old = self.device
                _run(["losetup", "-d", str(old)], check=False)
                self.device = _run(["losetup", "--find", "--show", str(self.image)]).stdout.strip()
                self._note(f"{old} still held by another mount namespace; detached "
                           f"(autoclear), image now on {self.device}")
                return
            time.sleep(0.1)

    def _umount(self) -> None:
        if not self.mounted:
            return
        os.sync()
        result = _run(["umount", str(self.mount_point)], check=False)
        if result.returncode != 0:
            self._note(f"umount failed ({result.stderr.strip()}); lazy umount")
            _run(["umount", "-l", str(self.mount_point)])
        self.mounted = False
        self._note("unmounted")

    def close(self) -> None:
        """Unmount, detach the loop device, delete the image (idempotent; each step
        is tried even when an earlier one failed)."""
        if self._closed:
            return
        self._closed = True
        errors: list[str] = []
        try:
            self._umount()
        except (OSError, RuntimeError, subprocess.SubprocessError) as e:
            errors.append(f"umount: {e}")
        if self._bound:
            result = _run(["umount", "-l", str(self.mount_point)], check=False)
            if result.returncode != 0:
                errors.append(f"umount of the bind mount: {result.stderr.strip()}")
            self._bound = False
        if self.device is not None:
            result = _run(["losetup", "-d", self.device], check=False)
            if result.returncode != 0:
                errors.append(f"losetup -d {self.device}: {result.stderr.strip()}")
            elif Path(f"/sys/block/{os.path.basename(self.device)}/loop").exists():
                self._note(f"{self.device} still held elsewhere; it detaches when released")
            else:
                self._note(f"detached {self.device}")
            self.device = None
        try:
            self.image.unlink()
            self._note("image deleted")
        except FileNotFoundError:
            pass
        except OSError as e:
            errors.append(f"unlink {self.image}: {e}")
        if errors:
            raise RuntimeError(f"LoopDisk cleanup of {self.mount_point}: {'; '.join(errors)}")

    def __enter__(self) -> LoopDisk:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        try:
            self.close()
        except RuntimeError as e:
            if exc is None:
                raise
            log.error("%s (while handling %r)", e, exc)   # do not hide the first error

    # -- faults --------------------------------------------------------------------------

    @property
    def read_only(self) -> bool:
        """Whether the mounted fs refuses writes now (after ``fail`` or an ext4 error).
        Since Linux 6.6 an ext4 error with errors=remount-ro shuts the fs down
        (``emergency_ro`` in the mount options) instead of setting the read-only
        flag statvfs shows, so both are looked at."""
        if not self.mounted:
            return False
        if os.statvfs(self.mount_point).f_flag & os.ST_RDONLY:
            return True
        target = os.path.realpath(self.mount_point)
        options: list[str] = []
        with open("/proc/self/mounts", encoding="utf-8") as f:
            for line in f:              # the last mount on the target is the one seen
                fields = line.split()
                if len(fields) >= 4 and fields[1] == target:
                    options = fields[3].split(",")
        return "ro" in options or "emergency_ro" in options

    def fill(self, leave_kb: int = 0) -> int:
        """Write ``filler`` until ENOSPC (kept until ``unfill``); -> bytes it holds.
        ``leave_kb``: then give back about that much space (the filler is cut), so
        the next large write fills the disk midway (a torn write)."""
        path = self.mount_point / FILLER
        written = 0
        chunk = b"\0" * _CHUNK
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            while True:
                try:
                    n = os.write(fd, chunk if len(chunk) else b"\0")
                except OSError as e:
                    if e.errno != errno.ENOSPC:
                        raise
                    if len(chunk) <= 1:
                        break
                    chunk = chunk[:len(chunk) // 2]   # the last blocks, in smaller writes
                    continue
                written += n
            try:
                os.fsync(fd)
            except OSError as e:     # delayed allocation may report ENOSPC only here
                if e.errno != errno.ENOSPC:
                    raise
            if leave_kb > 0:
                written = max(0, written - (leave_kb << 10))
                os.ftruncate(fd, written)
                os.fsync(fd)
        finally:
            os.close(fd)
        st = os.statvfs(self.mount_point)
        self._note(f"filled: filler holds {written} bytes, {st.f_bavail * st.f_frsize} "
                   f"bytes free")
        return written

    def unfill(self) -> None:
        """Remove the filler (repairing first when the fs went read-only)."""
        if self.read_only:
            self._note("read-only: repairing before unfill")
            self.repair()
        try:
            (self.mount_point / FILLER).unlink()
        except FileNotFoundError:
            pass
        os.sync()
        st = os.statvfs(self.mount_point)
        self._note(f"unfilled: {st.f_bavail * st.f_frsize} bytes free")

    def fail(self) -> None:
        """ext4 reports an error (``trigger_fs_error``): remounted read-only, EROFS."""
        assert self.device is not None and self.mounted, "not mounted"
        name = os.path.basename(self.device)
        Path(f"/sys/fs/ext4/{name}/trigger_fs_error").write_text("test\n")
        self._note(f"failed: ext4 error triggered on {name} "
                   f"({'read-only' if self.read_only else 'not yet read-only'})")

    def repair(self) -> None:
        """Unmount, ``e2fsck -fy``, mount again (a broker using it must be stopped)."""
        assert self.device is not None
        self._umount()
        self._free_device()
        result = _run(["e2fsck", "-fy", self.device], check=False, timeout=120)
        if result.returncode not in (0, 1, 2):   # 0 clean, 1 fixed, 2 fixed (reboot advised)
            raise RuntimeError(f"e2fsck -fy {self.device} exited with {result.returncode}: "
                               f"{result.stdout.strip()[-2000:]}")
        self._note(f"e2fsck -fy exited with {result.returncode}")
        self._mount()


if __name__ == "__main__":   # a quick manual check: python -m tests.fault.disk_faults
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    print("skip reason:", disk_skip_reason())
