"""The command line of a Java client loop the fault tests run and kill
(produce_loops.py, ctp_loops.py)."""

from __future__ import annotations

from pathlib import Path


def loop_argv(java_classpath: str, program: Path, args: list[str], tmp_dir: Path) -> list[str]:
    """``java`` running the single-file ``program`` with ``args``: a small heap and the
    serial collector (several loops share 2 cores), and java.io.tmpdir in ``tmp_dir``
    (created here): lz4-java and snappy-java unpack their native libraries there and
    remove them only at a clean exit, so a killed loop would leave them in /tmp."""
    tmp_dir.mkdir(parents=True, exist_ok=True)
    return ["java", "-Xmx256m", "-XX:+UseSerialGC", f"-Djava.io.tmpdir={tmp_dir}",
            "-cp", java_classpath, str(program), *args]
