"""`pybroker zookeeper -c config/zookeeper.properties`: a real ZooKeeper server in
the foreground.

Jars come from a local ZooKeeper install ($ZOOKEEPER_HOME, /usr/share/zookeeper,
/opt/zookeeper: its *.jar and lib/*.jar) or else from the ZooKeeper 3.9 jars
that ship inside the installed pyspark package. The properties file holds
ZooKeeper's own keys and is passed through, with a relative dataDir /
dataLogDir resolved against the current directory (and created). Java 17+ is
needed. SIGTERM/SIGINT are forwarded to the server; its exit code is returned.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

MAIN_CLASS = "org.apache.zookeeper.server.ZooKeeperServerMain"
MIN_JAVA = 17
# What ZooKeeperServerMain needs from pyspark/jars (prefixes of jar names).
_PYSPARK_JARS = ("zookeeper-", "slf4j-api-", "log4j-slf4j2-impl-", "log4j-api-", "log4j-core-",
                 "netty-handler-", "netty-transport-", "netty-common-", "netty-buffer-",
                 "netty-codec-", "netty-resolver-", "commons-io-", "commons-cli-",
                 "audience-annotations-", "metrics-core-", "snappy-java-")

_LOG4J2 = """status = error
appender.console.type = Console
appender.console.name = console
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c{1})%n
rootLogger.level = {level}
rootLogger.appenderRef.console.ref = console
"""


def java_major(java: str) -> int | None:
    """Major version of ``java`` (8 for "1.8.0_x"), None if it cannot be run."""
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if not m:
        return None
    major = int(m.group(1))
    return int(m.group(2) or 0) if major == 1 else major


def find_classpath() -> list[str]:
    for home in (os.environ.get("ZOOKEEPER_HOME"), "/usr/share/zookeeper", "/opt/zookeeper"):
        if home and os.path.isdir(home):
            jars = sorted(glob.glob(os.path.join(home, "*.jar")) +
                          glob.glob(os.path.join(home, "lib", "*.jar")))
            if any("zookeeper" in os.path.basename(j) for j in jars):
                return jars
    try:
        import pyspark
    except ImportError:
        return []
    jar_dir = Path(pyspark.__file__).parent / "jars"
    return sorted(str(j) for j in jar_dir.glob("*.jar")
                  if j.name.startswith(_PYSPARK_JARS) and "native-kqueue" not in j.name)


def read_properties(path: str | os.PathLike[str]) -> dict[str, str]:
    props: dict[str, str] = {}
    for raw in Path(path).read_text().splitlines():
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        m = re.match(r"([^=:\s]+)\s*[=:\s]?\s*(.*)$", line)   # key=value, key: value, key value
        if m:
            props[m.group(1)] = m.group(2).strip()
    return props


def write_zoo_cfg(props: dict[str, str], target: Path) -> dict[str, str]:
    """Resolve dataDir/dataLogDir against the cwd, create them, write zoo.cfg."""
    resolved = dict(props)
    resolved.setdefault("dataDir", "data/zookeeper")
    resolved.setdefault("admin.enableServer", "false")
    for key in ("dataDir", "dataLogDir"):
        if key in resolved:
            p = Path(resolved[key]).expanduser()
            p = p if p.is_absolute() else Path.cwd() / p
            p.mkdir(parents=True, exist_ok=True)
            resolved[key] = str(p)
    target.write_text("".join(f"{k}={v}\n" for k, v in resolved.items()))
    return resolved


def build_command(cfg: Path, log_cfg: Path, java: str = "java") -> list[str]:
    cp = find_classpath()
    if not cp:
        raise FileNotFoundError("no ZooKeeper jars found (set ZOOKEEPER_HOME or install pyspark)")
    return [java, "-Xmx512m", f"-Dlog4j2.configurationFile={log_cfg}",
            "-Dzookeeper.admin.enableServer=false", "-cp", os.pathsep.join(cp), MAIN_CLASS,
            str(cfg)]


def start_zookeeper(config: dict[str, str], workdir: Path, log_level: str = "INFO",
                    **popen: Any) -> subprocess.Popen[bytes]:
    """Start a server in the background (tests): -> the process."""
    cfg, log_cfg = workdir / "zoo.cfg", workdir / "log4j2.properties"
    write_zoo_cfg(config, cfg)
    log_cfg.write_text(_LOG4J2.replace("{level}", log_level))
    return subprocess.Popen(build_command(cfg, log_cfg, shutil.which("java") or "java"), **popen)


def run_zookeeper(config_path: str) -> int:
    java = shutil.which("java")
    major = java_major(java) if java else None
    if java is None or major is None:
        print("pybroker zookeeper: Java 17 or newer is needed, but no `java` was found on "
              "PATH (install e.g. openjdk-17-jre-headless).", file=sys.stderr)
        return 1
    if major < MIN_JAVA:
        print(f"pybroker zookeeper: Java {MIN_JAVA} or newer is needed; `{java}` is Java "
              f"{major}.", file=sys.stderr)
        return 1
    try:
        props = read_properties(config_path)
    except OSError as e:
        print(f"pybroker zookeeper: cannot read {config_path}: {e}", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="pybroker-zk-") as tmp:
        try:
            proc = start_zookeeper(props, Path(tmp))
        except FileNotFoundError as e:
            print(f"pybroker zookeeper: {e}", file=sys.stderr)
            return 1
        forwarded = False

        def forward(signum: int, _frame: Any) -> None:
            nonlocal forwarded
            forwarded = True
            proc.send_signal(signal.SIGTERM)
        old = {s: signal.signal(s, forward) for s in (signal.SIGTERM, signal.SIGINT)}
        try:
            code = proc.wait()
        finally:
            for s, h in old.items():
                signal.signal(s, h)
        return 0 if forwarded and code in (0, 143, -signal.SIGTERM) else code
