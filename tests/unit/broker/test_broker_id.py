"""broker/broker_id.py: which broker id a process runs as, from broker.id and the
log dirs' meta.properties (ZooKeeper's /brokers/seqid only when neither names one)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from broker.broker_id import settle_broker_id
from broker.config import ConfigError


def dirs(tmp_path: Path, *ids: int | None) -> list[str]:
    out = []
    for n, broker_id in enumerate(ids):
        d = tmp_path / f"d{n}"
        d.mkdir()
        if broker_id is not None:
            (d / "meta.properties").write_text(f"version=0\nbroker.id={broker_id}\n")
        out.append(str(d))
    return out


def settle(configured: int, log_dirs: list[str]) -> tuple[int, int]:
    """-> (the id, how many ids were taken from ZooKeeper)."""
    taken = []

    async def allocate() -> int:
        taken.append(1001 + len(taken))
        return taken[-1]
    return asyncio.run(settle_broker_id(configured, log_dirs, allocate)), len(taken)


def test_configured_id_agreeing_with_the_dirs_or_on_fresh_dirs(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert settle(3, dirs(tmp_path / "a", 3, None)) == (3, 0)
    assert settle(5, dirs(tmp_path / "b", None)) == (5, 0)


def test_generated_id_kept_from_the_dirs_else_taken_from_zookeeper(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert settle(-1, dirs(tmp_path / "a", 1007, 1007)) == (1007, 0)
    assert settle(-1, dirs(tmp_path / "b", None)) == (1001, 1)


def test_disagreements_are_config_errors_naming_the_values(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with pytest.raises(ConfigError, match="broker.id=3"):
        settle(4, dirs(tmp_path / "a", 3))
    with pytest.raises(ConfigError, match="disagree"):
        settle(-1, dirs(tmp_path / "b", 1, 2))
