"""kafka-python 3.0.12's own integration suite against one pybroker broker.

The sdist is fetched once with ``pip download`` into .cache/kafka-python-suite/
and unpacked; its fixtures spawn Kafka from a distribution unless told of an
external broker, so we add ``test/__init__.py`` and the small
``test/service.py`` they import (``ExternalService`` doing nothing and always
ready, ``SpawnedService`` refusing) and point them at our broker with
KAFKA_URI / KAFKA_VERSION / KAFKA_ROOT (CLIENTS.md).

The broker runs with the fixture's own settings, Kafka's ZooKeeper-mode ACL
authorizer included (``authorizer.class.name=kafka.security.authorizer.AclAuthorizer``,
``allow.everyone.if.no.acl.found=true``), so the ACL, log-dir and config tests
run as against Kafka 3.9.

Every test must pass except the ones listed below, each with its reason:
``DESELECTED`` are not run (none now: the transactional tests run since issue 14);
``SELF_SKIPPED`` skip themselves for a Kafka 3.9 (ZooKeeper) broker. SASL and SSL modules are not collected at all.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.integration.cluster import REPO, Cluster, MakeCluster

pytestmark = [pytest.mark.integration, pytest.mark.slow]

VERSION = "3.0.12"
TOTAL = 56          # tests in test/integration without the SASL and SSL modules
CACHE = REPO / ".cache" / "kafka-python-suite"
ROOT = CACHE / f"kafka_python-{VERSION}"

DESELECTED: dict[str, str] = {}

SELF_SKIPPED: dict[str, str] = {
    "test/integration/test_admin_integration.py::test_describe_metadata_quorum":
        "skipif KAFKA_VERSION < 4.0: DescribeQuorum is KRaft only",
    "test/integration/test_admin_integration.py::test_describe_topic_partitions":
        "skipif KAFKA_VERSION < 4.0: DescribeTopicPartitions is KRaft only",
    "test/integration/test_admin_integration.py::test_describe_topic_partitions_pagination":
        "skipif KAFKA_VERSION < 4.0: DescribeTopicPartitions is KRaft only",
    "test/integration/test_admin_integration.py::test_list_config_resources":
        "skipif KAFKA_VERSION < 4.1: ListConfigResources is KRaft only",
    "test/integration/test_consumer_integration.py::test_kafka_consumer_offsets_for_time_old":
        "skipif KAFKA_VERSION >= 0.10.1: tests the pre-ListOffsets-v1 error path",
}

SHIM = '''"""Added by pybroker's driver: run the integration suite against an external broker."""


class ExternalService:
    def __init__(self, host, port):
        self.host, self.port = host, port

    def open(self):
        pass

    def close(self):
        pass

    def start(self):
        pass

    def stop(self):
        pass

    def dump_logs(self):
        pass

    def wait_for(self, pattern, timeout=30):
        return True


class SpawnedService:
    def __init__(self, *args, **kwargs):
        raise RuntimeError("pybroker's driver runs this suite against an external broker only")
'''


def ensure_suite() -> Path:
    """Download and unpack the sdist once; (re)write the shim every time."""
    if not (ROOT / "test" / "integration").is_dir():
        CACHE.mkdir(parents=True, exist_ok=True)
        sdist = CACHE / f"kafka_python-{VERSION}.tar.gz"
        if not sdist.exists():
            res = subprocess.run([sys.executable, "-m", "pip", "download", "--no-input",
                                  "--disable-pip-version-check", "--no-binary", ":all:",
                                  "--no-deps", "-d", str(CACHE), f"kafka-python=={VERSION}"],
                                 capture_output=True, text=True, timeout=600)
            assert res.returncode == 0 and sdist.exists(), \
                f"pip download kafka-python=={VERSION} failed:\n{res.stdout}\n{res.stderr}"
        with tarfile.open(sdist) as tf:
            tf.extractall(CACHE, filter="data")
    (ROOT / "test" / "__init__.py").touch()
    (ROOT / "test" / "service.py").write_text(SHIM)
    return ROOT


@pytest.fixture(scope="module")
def cluster(make_cluster: MakeCluster) -> Cluster:
    # As the suite's own broker template (kafka-python's servers/resources/default/
    # kafka.properties): 4 partitions, auto-creation on, Kafka's ZooKeeper-mode ACL
    # authorizer with allow.everyone.if.no.acl.found=true (test_create_describe_delete_acls
    # needs it), and its group settings: a 1 s minimum session timeout (test_group's
    # members ask for 3 s), no initial rebalance delay, 2 offsets partitions, and a
    # one-replica __transaction_state (as Kafka's stock server.properties).
    return make_cluster("kp-suite", overrides={
        "auto.create.topics.enable": "true", "num.partitions": "4",
        "delete.topic.enable": "true",
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "allow.everyone.if.no.acl.found": "true",
        "group.min.session.timeout.ms": "1000", "group.initial.rebalance.delay.ms": "0",
        "offsets.topic.num.partitions": "2", "offsets.topic.replication.factor": "1",
        "offsets.commit.timeout.ms": "500",
        "transaction.state.log.replication.factor": "1", "transaction.state.log.min.isr": "1"})


def parse_junit(path: Path) -> dict[str, tuple[str, str]]:
    """test id -> (outcome, message) from pytest's junit xml."""
    out: dict[str, tuple[str, str]] = {}
    for case in ET.parse(path).iter("testcase"):
        module = case.get("classname", "").replace(".", "/") + ".py"
        test_id = f"{module}::{case.get('name')}"
        outcome, msg = "passed", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": "failed"}.get(child.tag, child.tag)
                msg = (child.get("message") or "")[:300]
                break
        out[test_id] = (outcome, msg)
    return out


def test_kafka_python_integration_suite(cluster: Cluster, tmp_path: Path) -> None:
    root = ensure_suite()
    kafka_root = tmp_path / "no-kafka-distribution"
    kafka_root.mkdir()
    junit = tmp_path / "junit.xml"
    env = {**os.environ, "KAFKA_VERSION": "3.9.0", "KAFKA_URI": f"tcp://{cluster.bootstrap}",
           "KAFKA_ROOT": str(kafka_root), "PYTHONPATH": str(root)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    cmd = [sys.executable, "-m", "pytest", "test/integration",
           "--ignore=test/integration/test_sasl_integration.py",
           "--ignore=test/integration/test_ssl_integration.py",
           "-o", "addopts=", "-o", "log_level=WARNING", "-p", "no:cacheprovider",
           "-q", "-rfEs", f"--junitxml={junit}"]
    for test_id in DESELECTED:
        cmd += ["--deselect", test_id]
    res = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=600)
    assert junit.exists(), f"no junit report; pytest exited {res.returncode}\n{res.stdout[-4000:]}\n{res.stderr[-2000:]}"
    results = parse_junit(junit)

    ran = set(results)
    assert not ran & set(DESELECTED), f"deselected tests ran: {ran & set(DESELECTED)}"
    assert len(ran) + len(DESELECTED) == TOTAL, \
        f"expected {TOTAL} tests in the suite, saw {len(ran)} + {len(DESELECTED)} deselected"
    bad = {t: r for t, r in results.items()
           if not (r[0] == "passed" or (r[0] == "skipped" and t in SELF_SKIPPED))}
    unexpected_pass = [t for t in SELF_SKIPPED if results.get(t, ("?",))[0] != "skipped"]
    summary = "\n".join(f"  {t}: {o} {m}" for t, (o, m) in sorted(bad.items()))
    assert not bad, (f"{len(bad)} of {len(ran)} kafka-python integration tests did not pass:\n"
                     f"{summary}\n--- pytest output tail ---\n{res.stdout[-6000:]}\n"
                     f"{cluster.brokers[0].tail(30)}")
    assert not unexpected_pass, f"expected to skip themselves but did not: {unexpected_pass}"
    passed = {t for t, r in results.items() if r[0] == "passed"}
    assert passed == ran - set(SELF_SKIPPED)
    assert len(passed) == TOTAL - len(DESELECTED) - len(SELF_SKIPPED)
