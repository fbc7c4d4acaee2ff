"""Fetch the Java Kafka client (kafka-clients 3.9.1) used as a byte-exact oracle.

The jars come from a wheel on PyPI that bundles them (see CLIENTS.md):
``shigawire-apache-flink-libraries==2.0.0.post1`` ships ``pyflink/lib/*.jar``.
We download it with ``pip download --no-deps`` into ``<repo>/.cache/`` and
extract only the five jars the client needs into ``<repo>/.cache/java-client/``.

Idempotent: when every jar is already there, nothing is downloaded. Any failure
exits nonzero with a message (``make test`` calls this and must stop loudly).

Usage: ``python tests/oracle/install_java_client.py`` (prints the classpath).
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CACHE = REPO / ".cache"
JAR_DIR = CACHE / "java-client"
WHEEL_SPEC = "shigawire-apache-flink-libraries==2.0.0.post1"
WHEEL_GLOB = "shigawire_apache_flink_libraries-2.0.0.post1-*.whl"
# Jars the client needs; the wheel names them pyflink/lib/<name>.jar (no version).
JAR_PREFIXES = ("kafka-clients", "slf4j-api", "lz4-java", "snappy-java", "zstd-jni")


def installed_jars() -> list[Path] | None:
    """The five jars when all are present, else None."""
    if not JAR_DIR.is_dir():
        return None
    found: list[Path] = []
    for prefix in JAR_PREFIXES:
        jar = JAR_DIR / f"{prefix}.jar"
        if not jar.is_file():
            return None
        found.append(jar)
    return found


def classpath() -> str:
    """Classpath string for ``java -cp``; installs first when needed."""
    jars = installed_jars() or install()
    return os.pathsep.join(str(j) for j in jars)


def _download_wheel() -> Path:
    existing = sorted(CACHE.glob(WHEEL_GLOB))
    if existing:
        return existing[-1]
    CACHE.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
           "-d", str(CACHE), WHEEL_SPEC]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"install_java_client: pip download failed ({proc.returncode}):\n"
                         f"{proc.stdout}\n{proc.stderr}")
    existing = sorted(CACHE.glob(WHEEL_GLOB))
    if not existing:
        raise SystemExit(f"install_java_client: pip download produced no {WHEEL_GLOB} in {CACHE}")
    return existing[-1]


def _extract(wheel: Path) -> list[Path]:
    JAR_DIR.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel) as zf:
        names = [n for n in zf.namelist() if n.startswith("pyflink/lib/") and n.endswith(".jar")]
        out: list[Path] = []
        for prefix in JAR_PREFIXES:
            member = f"pyflink/lib/{prefix}.jar"
            if member not in names:
                raise SystemExit(f"install_java_client: no {member} in {wheel.name}")
            target = JAR_DIR / f"{prefix}.jar"
            tmp = target.with_suffix(".jar.tmp")
            with zf.open(member) as src, open(tmp, "wb") as dst:
                while chunk := src.read(1 << 20):
                    dst.write(chunk)
            tmp.replace(target)  # atomic: a half-written jar never looks installed
            out.append(target)
    return out


def install() -> list[Path]:
    jars = installed_jars()
    if jars is not None:
        return jars
    wheel = _download_wheel()
    try:
        jars = _extract(wheel)
    except zipfile.BadZipFile as exc:
        wheel.unlink(missing_ok=True)  # a truncated download: retry next time
        raise SystemExit(f"install_java_client: bad wheel {wheel}: {exc}") from exc
    return jars


def main() -> int:
    try:
        jars = install()
    except OSError as exc:
        print(f"install_java_client: {exc}", file=sys.stderr)
        return 1
    print(os.pathsep.join(str(j) for j in jars))
    return 0


if __name__ == "__main__":
    sys.exit(main())
