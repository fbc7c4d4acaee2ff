"""The Java client (kafka-clients 3.9.1, idempotent producer by default) running
JavaClientScenario.java as a JDK 17 single-file program."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.clients.common import wait_topic_gone
from tests.integration.cluster import REPO

pytestmark = pytest.mark.integration

PROGRAM = Path(__file__).with_name("JavaClientScenario.java")
JAR_DIR = REPO / ".cache" / "java-client"
JARS = ("kafka-clients", "slf4j-api", "lz4-java", "snappy-java", "zstd-jni")


@pytest.fixture(scope="module")
def java_classpath() -> str:
    if shutil.which("java") is None:
        pytest.skip("no java on PATH (JDK 17 needed)")
    if not all((JAR_DIR / f"{j}.jar").is_file() for j in JARS):
        res = subprocess.run([sys.executable, str(REPO / "tests/oracle/install_java_client.py")],
                             capture_output=True, text=True, timeout=900)
        assert res.returncode == 0, f"install_java_client failed:\n{res.stdout}\n{res.stderr}"
    return ":".join(str(JAR_DIR / f"{j}.jar") for j in JARS)


def test_java_client_round_trip(java_classpath: str, bootstrap: str, port: int,
                                topic: str) -> None:
    res = subprocess.run(["java", "-cp", java_classpath, str(PROGRAM), bootstrap, topic],
                         capture_output=True, text=True, timeout=240, cwd=REPO)
    assert res.returncode == 0, (f"java scenario exited {res.returncode}\nstdout:\n"
                                 f"{res.stdout[-3000:]}\nstderr:\n{res.stderr[-5000:]}")
    assert "OK 60 records" in res.stdout, res.stdout
    wait_topic_gone(port, topic)
