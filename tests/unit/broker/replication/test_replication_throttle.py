"""Replication quotas (broker/replication/throttle.py): the windowed rate, the
throttled-replica rules on the leader and follower sides, the dynamic rate keys
and the reassignment tool's throttle lists.

The leader and follower rules run over FakeCluster (real logs, in-process
ReplicaManagers, a fake clock shared by the rate and the fetchers).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace

import pytest

from broker import dynamic_broker_configs as dbc
from broker.config import BrokerConfig
from broker.replication.fetch_reads import FetchPartitionRequest
from broker.replication.throttle import (FOLLOWER, FOLLOWER_RATE, LEADER, LEADER_RATE,
                                         UNLIMITED, ReplicationQuota, WindowedRate,
                                         leader_throttle, parse_throttled_replicas,
                                         throttled_bytes)
from broker.security.reconfigure import ReconfigureError
from protocol.records import build_batch
from tools.reassign_partitions import throttled_replicas

from tests.unit.broker.dynamic_config.fakes import FakeHost
from tests.unit.broker.replication.fakes import FakeClock
from tests.unit.broker.replication.replication_fakes import FakeCluster

TP = ("t", 0)
KB = 1024


# -- the rate ----------------------------------------------------------------------------

def test_rate_is_bytes_over_time_since_oldest_sample_at_least_one_window() -> None:
    r = WindowedRate(samples=11, window_ms=1000)
    r.record(3000, now=0)
    assert r.rate(0) == 3000            # one window at least: 3000 B over 1 s
    assert r.rate(500) == 3000
    assert r.rate(2000) == 1500         # 3000 B over 2 s
    r.record(3000, now=2000)            # a new sample (the first is a window old)
    assert r.rate(3000) == 2000         # 6000 B over 3 s


def test_samples_older_than_num_windows_are_dropped() -> None:
    r = WindowedRate(samples=3, window_ms=1000)
    r.record(9000, now=0)
    r.record(1000, now=2500)
    assert r.total(2999) == 10_000
    assert r.total(3000) == 1000        # the first sample is 3 windows old
    assert r.rate(3000) == 1000         # 1000 B since 2500, at least one window


def test_a_sample_spans_one_window_and_the_ring_keeps_num_samples() -> None:
    r = WindowedRate(samples=2, window_ms=1000)
    for t in range(0, 1000, 100):
        r.record(10, now=t)             # all in the first sample
    assert len(r._samples) == 1
    r.record(10, now=1000)
    r.record(10, now=2000)              # a third sample pushes out the first
    assert len(r._samples) == 2 and r.total(2000) == 20


def test_quota_exceeded_only_above_the_bound_and_unlimited_never() -> None:
    clock = FakeClock(0)
    q = ReplicationQuota(LEADER, 1, lambda _t: {}, samples=11, window_seconds=1, clock=clock)
    q.record(10 * 1000 * KB)
    assert q.unlimited and not q.is_exceeded() and q.ms_until_within() == 0
    q.update_quota(1000 * KB)           # 10 MB in the first second: far above 1 MB/s
    assert q.is_exceeded()
    wait = q.ms_until_within()
    assert wait == 10_000               # 10 MB / 1 MB/s = 10 s after the sample began
    clock.advance(wait)
    assert not q.is_exceeded()          # exactly at the bound is within it
    assert q.rate() == pytest.approx(1000 * KB, rel=0.01)


def test_the_wait_is_cut_short_when_the_oldest_sample_expires() -> None:
    clock = FakeClock(0)
    q = ReplicationQuota(FOLLOWER, 1, lambda _t: {}, samples=2, window_seconds=1, clock=clock)
    q.update_quota(100)
    q.record(1_000_000)                 # would take 10,000 s at 100 B/s
    assert q.ms_until_within() == 2000  # but the sample is gone after 2 windows
    clock.advance(2000)
    assert not q.is_exceeded()


def test_a_zero_rate_stops_throttled_traffic_after_the_first_bytes() -> None:
    clock = FakeClock(0)
    q = ReplicationQuota(LEADER, 1, lambda _t: {}, clock=clock)
    q.update_quota(0)
    assert not q.is_exceeded()
    q.record(1)
    assert q.is_exceeded()


# -- which replicas are throttled ----------------------------------------------------------

def test_throttled_replica_lists_keep_only_this_brokers_entries() -> None:
    assert parse_throttled_replicas("*", 1) is None
    assert parse_throttled_replicas("", 1) == frozenset()
    assert parse_throttled_replicas("0:1,1:2,2:1, 3:1", 1) == {0, 2, 3}
    assert parse_throttled_replicas("0:1,1:2", 2) == {1}
    assert parse_throttled_replicas("0:1", 7) == frozenset()


def test_each_side_reads_its_own_topic_config() -> None:
    configs = {"t": {"leader.replication.throttled.replicas": "0:1,1:2",
                     "follower.replication.throttled.replicas": "1:1"},
               "all": {"leader.replication.throttled.replicas": "*"}}
    leader = ReplicationQuota(LEADER, 1, lambda t: configs.get(t, {}))
    follower = ReplicationQuota(FOLLOWER, 1, lambda t: configs.get(t, {}))
    assert leader.is_throttled(("t", 0)) and not leader.is_throttled(("t", 1))
    assert follower.is_throttled(("t", 1)) and not follower.is_throttled(("t", 0))
    assert leader.is_throttled(("all", 5)) and not follower.is_throttled(("all", 5))
    assert not leader.is_throttled(("other", 0))
    configs["t"]["leader.replication.throttled.replicas"] = "1:1"     # a config change
    assert leader.is_throttled(("t", 1)) and not leader.is_throttled(("t", 0))
    assert throttled_bytes(leader, {("t", 0): 10, ("t", 1): 20, ("all", 0): 5}) == 25


def test_leader_throttle_only_for_followers_with_a_bound() -> None:
    q = ReplicationQuota(LEADER, 1, lambda _t: {"leader.replication.throttled.replicas": "*"})
    assert leader_throttle(q, 2) is None            # unlimited
    q.update_quota(1)
    assert leader_throttle(q, -1) is None           # a consumer
    assert leader_throttle(None, 2) is None
    throttled = leader_throttle(q, 2)
    assert throttled is not None
    p = SimpleNamespace(tp=TP, isr=frozenset({1}))
    assert not throttled(p)                         # nothing recorded yet: not exceeded
    q.record(10)
    assert throttled(p)
    assert not throttled(SimpleNamespace(tp=TP, isr=frozenset({1, 2})))   # in the ISR


# -- the leader rule over real logs ----------------------------------------------------------

def _leader_with_data(tmp_path: Path, isr: tuple[int, ...]) -> tuple[FakeCluster, ReplicationQuota]:
    c = FakeCluster(tmp_path, ids=(1, 2))
    c.elect(1, isr=isr, to=(1,))
    rm = c.nodes[1].replicas
    for i in range(4):
        batch = build_batch([(None, bytes([i]) * 4000, c.clock())])
        res = asyncio.run(rm.appends.append_records(1, 1000, {TP: batch}))
        assert res[TP].error == 0
    quota = ReplicationQuota(LEADER, 1, lambda _t: {"leader.replication.throttled.replicas": "0:1"},
                             clock=c.clock)
    quota.update_quota(8000)
    rm.leader_quota = quota
    return c, quota


def _fetch(c: FakeCluster, replica_id: int, offset: int = 0) -> tuple[int, int]:
    rm = c.nodes[1].replicas
    req = {TP: FetchPartitionRequest(offset, 1 << 20, -1, -1, -1)}
    r = asyncio.run(rm.fetch(replica_id, 0, 1, 1 << 20, 0, req))[TP]
    return r.size, r.high_watermark


def test_leader_withholds_records_from_an_out_of_sync_follower_over_quota(tmp_path: Path) -> None:
    c, quota = _leader_with_data(tmp_path, isr=(1,))
    size, _ = _fetch(c, 2)
    assert size > 0                     # under the quota: read
    quota.record(size)                  # what the Fetch handler records
    size2, hw = _fetch(c, 2)
    assert size2 == 0 and hw >= 0       # over it: answered without records
    assert _fetch(c, -1)[0] > 0         # a consumer is not a replica fetch
    c.clock.advance(quota.ms_until_within())
    assert _fetch(c, 2)[0] > 0          # back under the bound


def test_leader_never_withholds_from_an_in_sync_follower(tmp_path: Path) -> None:
    c, quota = _leader_with_data(tmp_path, isr=(1, 2))
    quota.record(1 << 20)
    assert quota.is_exceeded()
    assert _fetch(c, 2)[0] > 0


def test_a_throttled_fetch_waits_rather_than_spins(tmp_path: Path) -> None:
    c, quota = _leader_with_data(tmp_path, isr=(1,))
    quota.record(1 << 20)
    rm = c.nodes[1].replicas

    async def main() -> int:
        req = {TP: FetchPartitionRequest(0, 1 << 20, -1, -1, -1)}
        task = asyncio.ensure_future(rm.fetch(2, 500, 1, 1 << 20, 0, req))
        await asyncio.sleep(0)
        assert not task.done()          # throttled bytes do not count towards min_bytes
        c.clock.advance(500)
        return (await task)[TP].size
    assert asyncio.run(main()) == 0


# -- the follower rule -------------------------------------------------------------------

def test_follower_leaves_out_of_sync_throttled_partitions_out_of_its_fetch(tmp_path: Path) -> None:
    async def main() -> None:
        c = FakeCluster(tmp_path, ids=(1, 2))
        c.elect(1, isr=(1,))
        rm = c.nodes[1].replicas
        for i in range(6):
            batch = build_batch([(None, bytes([i]) * 4000, c.clock())])
            assert (await rm.appends.append_records(1, 1000, {TP: batch}))[TP].error == 0
        node = c.nodes[2]
        quota = ReplicationQuota(FOLLOWER, 2,
                                 lambda _t: {"follower.replication.throttled.replicas": "0:2"},
                                 clock=c.clock)
        quota.update_quota(1000)
        node.fetchers.set_quota(quota)
        node.fetchers.max_partition_bytes = 5000
        for f in node.fetchers.fetchers.values():
            f.max_partition_bytes = 5000
        fetcher = node.fetchers.fetcher_for(TP)
        assert fetcher is not None and fetcher.quota is quota
        await node.fetch_round()                    # truncation, then the first fetch
        p = node.partition()
        first = p.log_end_offset
        assert first > 0 and quota.rate() > 1000    # recorded, now over the bound
        fetches = fetcher.endpoint.fetches
        assert not await node.fetch_round()         # left out: no request at all
        assert fetcher.endpoint.fetches == fetches and p.log_end_offset == first
        state = fetcher.partitions[TP]
        assert state.throttled_until_ms > c.clock()
        c.clock.advance(fetcher.backoff_ms)         # the wait is at most the back-off,
        await node.fetch_round()                    # but the rate is still over the bound
        assert fetcher.endpoint.fetches == fetches
        c.clock.advance(quota.ms_until_within())
        assert not quota.is_exceeded()
        await node.fetch_round()
        assert p.log_end_offset > first             # allowed again once under it
        # once in sync with the leader the follower is not held back
        quota.update_quota(UNLIMITED)
        for _ in range(10):
            await node.fetch_round()
        assert state.in_sync
        quota.update_quota(1)
        assert quota.is_exceeded()
        batch = build_batch([(None, b"x" * 100, c.clock())])
        assert (await rm.appends.append_records(1, 1000, {TP: batch}))[TP].error == 0
        end = rm.partition(*TP).log_end_offset
        await node.fetch_round()
        assert p.log_end_offset == end
    asyncio.run(main())


# -- the dynamic keys --------------------------------------------------------------------

def _broker() -> FakeHost:
    b = FakeHost(BrokerConfig(broker_id=1, replication_quota_window_num=11,
                              replication_quota_window_size_seconds=1))
    b.replicas = SimpleNamespace(leader_quota=None, fetchers=SimpleNamespace(),
                                 producer_id_expiration_ms=86_400_000)
    dbc.install_replication_quotas(b)
    return b


def test_rate_keys_set_and_reset_the_quotas() -> None:
    b = _broker()
    assert b.replicas.leader_quota is b.replication_quotas[LEADER]
    dbc.apply(b, {LEADER_RATE: "3000000", FOLLOWER_RATE: "2000000"}, validate_only=True)
    assert b.replication_quotas[LEADER].unlimited
    dbc.apply(b, {LEADER_RATE: "3000000", FOLLOWER_RATE: "2000000"}, validate_only=False)
    assert b.replication_quotas[LEADER].bound == 3_000_000
    assert b.replication_quotas[FOLLOWER].bound == 2_000_000
    b.dynamic_configs = {LEADER_RATE: "3000000", FOLLOWER_RATE: "2000000"}
    dbc.apply(b, {LEADER_RATE: None}, validate_only=False)
    assert b.replication_quotas[LEADER].unlimited
    assert b.replication_quotas[FOLLOWER].bound == 2_000_000


def test_rates_stored_before_the_quotas_exist_apply_when_they_are_made() -> None:
    b = _broker()
    b.replication_quotas = {}                     # start-up: configs load first
    dbc.apply(b, {LEADER_RATE: "123"}, validate_only=False)
    b.dynamic_configs = {LEADER_RATE: "123"}      # what the broker keeps after the load
    quotas = dbc.install_replication_quotas(b)
    assert quotas[LEADER].bound == 123 and quotas[FOLLOWER].unlimited


@pytest.mark.parametrize("value, why", [("fast", "Not a number of type LONG"),
                                        ("-1", "Value must be at least 0")])
def test_a_bad_rate_names_key_and_value_and_changes_nothing(value: str, why: str) -> None:
    b = _broker()
    with pytest.raises(ReconfigureError) as e:
        dbc.apply(b, {FOLLOWER_RATE: "5", LEADER_RATE: value}, validate_only=False)
    assert e.value.invalid_config
    assert str(e.value) == f"Invalid value {value} for configuration {LEADER_RATE}: {why}"
    assert b.replication_quotas[FOLLOWER].unlimited


def test_the_default_entity_takes_only_the_rates() -> None:
    dbc.check_default({LEADER_RATE: "100", FOLLOWER_RATE: None})
    with pytest.raises(ReconfigureError, match="broker id must be specified: "
                                               "listener.name.x.ssl.keystore.location"):
        dbc.check_default({"listener.name.x.ssl.keystore.location": "/k.pem"})


def test_describe_rows_for_the_rates() -> None:
    rows = {r.name: r for r in dbc.rate_rows({LEADER_RATE: "10"})}
    assert rows[LEADER_RATE].value == "10" and rows[LEADER_RATE].source == 2
    assert rows[FOLLOWER_RATE].value == str(UNLIMITED) and rows[FOLLOWER_RATE].source == 5
    default = dbc.rate_rows({FOLLOWER_RATE: "7"}, default_entry=True)
    assert [(r.name, r.value, int(r.source)) for r in default] == [(FOLLOWER_RATE, "7", 3)]


# -- the reassignment tool's lists --------------------------------------------------------

def test_reassignment_throttles_current_replicas_as_leaders_and_new_ones_as_followers() -> None:
    current = {("t", 0): [0, 1], ("t", 1): [1, 2], ("u", 0): [0]}
    plan = {("t", 0): [1, 2], ("t", 1): [1, 2], ("u", 0): [2]}
    assert throttled_replicas(current, plan) == {
        "t": ("0:0,0:1,1:1,1:2", "0:2"),
        "u": ("0:0", "0:2"),
    }
