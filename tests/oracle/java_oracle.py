"""Python side of the Java oracle (tests/oracle/KafkaOracle.java).

One JVM per test session, spoken to over a line protocol on stdin/stdout (see
the Java file's header). Many cases go in one ``batch`` round trip: the JVM
reads the whole batch before answering, so neither pipe can fill while the
other side is blocked.
"""

from __future__ import annotations

import os
import shutil
import signal
import struct
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from protocol.schema import FieldSpec, MessageSpec, Struct, StructSpec
from tests.oracle import install_java_client

SOURCE = Path(__file__).with_name("KafkaOracle.java")


class OracleError(RuntimeError):
    """The JVM died or answered something unparseable (not a per-case error)."""


@dataclass(frozen=True)
class Answer:
    ok: bool
    hex: str = ""     # when ok: the bytes as hex ("" for an empty message)
    error: str = ""   # when not ok: Java's reason
    fields: str = ""  # when ok: the bytes as Kafka's Schema reads them (see render_ours)

    @property
    def data(self) -> bytes:
        return bytes.fromhex(self.hex)


def java_available() -> str | None:
    """Why the oracle cannot run here, or None when it can."""
    if shutil.which("java") is None:
        return "no java on PATH"
    return None


class JavaOracle:
    def __init__(self) -> None:
        cp = install_java_client.classpath()
        self._stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            ["java", "-Xshare:auto", "-XX:+UseSerialGC", "-cp", cp, str(SOURCE)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
            text=True, encoding="utf-8", bufsize=1 << 16,
        )
        first = self._readline()
        if first != "ready":
            raise OracleError(f"oracle did not start: {first!r} {self._stderr_text()}")
        self._versions: dict[int, tuple[int, int]] | None = None

    # ------------------------------------------------------------ protocol

    def _readline(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise OracleError(f"oracle exited (rc={self.proc.poll()}): {self._stderr_text()}")
        return line.rstrip("\n")

    def _stderr_text(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode("utf-8", "replace")[-2000:]

    @staticmethod
    def _parse(line: str) -> Answer:
        status, _, rest = line.partition(" ")
        if status == "ok":
            data, _, fields = rest.partition(" ")
            return Answer(True, "" if data == "-" else data, fields=fields)
        if status == "err":
            return Answer(False, error=rest)
        raise OracleError(f"unparseable oracle answer: {line[:200]!r}")

    def batch(self, commands: list[str]) -> list[Answer]:
        """Run commands in one round trip; answers in the same order."""
        if not commands:
            return []
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"batch {len(commands)}\n" + "\n".join(commands) + "\n")
        self.proc.stdin.flush()
        return [self._parse(self._readline()) for _ in commands]

    # ------------------------------------------------------------ operations

    def versions(self) -> dict[int, tuple[int, int]]:
        """api key -> (lowest, highest) the Java client's message classes support."""
        if self._versions is None:
            (ans,) = self.batch(["versions"])
            if not ans.ok:
                raise OracleError(ans.error)
            out: dict[int, tuple[int, int]] = {}
            for item in ans.hex.split(","):
                key, lo, hi = (int(x) for x in item.split(":"))
                out[key] = (lo, hi)
            self._versions = out
        return self._versions

    @staticmethod
    def decode_encode_cmd(kind: str, api_key: int, version: int, body: bytes) -> str:
        return f"decode-encode {kind} {api_key} {version} {body.hex() or '-'}"

    @staticmethod
    def random_cmd(kind: str, api_key: int, version: int, seed: int) -> str:
        return f"random {kind} {api_key} {version} {seed}"

    def close(self) -> None:
        """Ask the JVM to quit; kill it by pid if it does not within 5 s."""
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.write("quit\n")
                self.proc.stdin.close()
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self._stderr.close()


# ---------------------------------------------------------------- our side of <fields>

def render_ours(spec: MessageSpec, msg: Struct, version: int) -> str:
    """Render our message in the oracle's <fields> form (KafkaOracle.java header).

    Equal renderings mean Kafka's schema and ours agree on every field's name,
    position, value and tag at this version, which byte equality alone does not
    show (two int32 fields swapped, or a tag number Kafka keeps as unknown).
    """
    return _render_struct(spec.struct, msg, version, spec.is_flexible(version))


def _name(kafka_name: str) -> str:
    return kafka_name.replace("_", "").lower()


def _render_struct(spec: StructSpec, obj: Struct, version: int, flexible: bool) -> str:
    parts: list[str] = []
    tagged: list[tuple[int, str]] = []
    for f in spec.fields:
        if version not in f.versions:
            continue
        value = getattr(obj, f.attr)
        if flexible and version in f.tagged:
            assert f.tag is not None
            if value != f.default_value():
                tagged.append((f.tag, f"{_name(f.name)}:{_render(f, value, version, flexible)}"))
            continue
        parts.append(f"{_name(f.name)}:{_render(f, value, version, flexible)}")
    if flexible:
        for tag, payload in (obj.unknown_tags or {}).items():
            tagged.append((tag, "?" + bytes(payload).hex()))
        tagged.sort(key=lambda t: t[0])
        parts.append("#[" + ",".join(f"{t}={r}" for t, r in tagged) + "]")
    return "{" + ",".join(parts) + "}"


def _render(f: FieldSpec, value: Any, version: int, flexible: bool) -> str:
    if value is None:
        return "null"
    if f.is_array:
        return "[" + ",".join(_render_one(f, f.element_type, v, version, flexible)
                              for v in value) + "]"
    return _render_one(f, f.type, value, version, flexible)


def _render_one(f: FieldSpec, t: str, value: Any, version: int, flexible: bool) -> str:
    if f.is_struct:
        assert f.struct is not None
        return _render_struct(f.struct, value, version, flexible)
    if t == "bool":
        return "true" if value else "false"
    if t == "float64":
        return str(struct.unpack(">q", struct.pack(">d", value))[0])
    if t == "string":
        return value.encode("utf-8").hex()
    if t in ("bytes", "records"):
        return bytes(value).hex()
    if t == "uuid":
        return value.hex
    return str(int(value))
