"""broker/quotas/client_quota_manager.py: Kafka's precedence of user, client-id and
(user, client-id) quotas with <default> entities, who shares a rate, the ANONYMOUS
user, and the request quota's bounded throttle."""

from __future__ import annotations

import pytest

from broker.quotas.client_quota_manager import (DEFAULT, SENSOR_EXPIRY_CHECK_MS,
                                                SENSOR_EXPIRY_MS, ClientQuotaManager,
                                                QuotaEntity, QuotaType, quota_user)

U, C = "alice", "app"
ENTITIES = {                       # KIP-55's order, most specific first
    1: QuotaEntity(U, C), 2: QuotaEntity(U, DEFAULT), 3: QuotaEntity(U, None),
    4: QuotaEntity(DEFAULT, C), 5: QuotaEntity(DEFAULT, DEFAULT), 6: QuotaEntity(DEFAULT, None),
    7: QuotaEntity(None, C), 8: QuotaEntity(None, DEFAULT),
}
SHARING = {1: (U, C), 2: (U, C), 3: (U, ""), 4: (U, C), 5: (U, C), 6: (U, ""),
           7: ("", C), 8: ("", C)}


def manager(quota_type: QuotaType = QuotaType.PRODUCE) -> ClientQuotaManager:
    return ClientQuotaManager(quota_type, samples=11, window_seconds=1)


@pytest.mark.parametrize("first", sorted(ENTITIES))
def test_the_most_specific_entity_wins(first: int) -> None:
    """With quotas on entity ``first`` and every less specific one, ``first`` applies
    and decides who shares the rate."""
    m = manager()
    for rank, entity in ENTITIES.items():
        if rank >= first:
            m.update_quota(entity, float(rank * 1000))
    assert m.quota_for(f"User:{U}", C) == first * 1000
    assert m.metric_tags(U, C) == SHARING[first]


def test_other_clients_fall_to_the_defaults() -> None:
    m = manager()
    for rank, entity in ENTITIES.items():
        m.update_quota(entity, float(rank * 1000))
    assert m.quota_for("User:bob", C) == 4000            # <default> user, client C
    assert m.quota_for("User:bob", "other") == 5000      # <default> user, <default> client
    assert m.quota_for(f"User:{U}", "other") == 2000     # U, <default> client


def test_client_id_quota_is_shared_by_every_user_of_the_client_id() -> None:
    m = manager()
    m.update_quota(QuotaEntity(None, C), 1000.0)
    assert m.metric_tags(U, C) == m.metric_tags("bob", C) == ("", C)
    assert m.record_and_throttle_ms("User:alice", C, 600, 0) == 0
    assert m.record_and_throttle_ms("User:bob", C, 600, 0) > 0       # 1200 in 1 s together
    assert m.quota_for("User:alice", "other") is None                # no default: unlimited
    assert m.record_and_throttle_ms("User:alice", "other", 10**9, 0) == 0


def test_quotas_are_per_type() -> None:
    produce, fetch = manager(QuotaType.PRODUCE), manager(QuotaType.FETCH)
    produce.update_quota(QuotaEntity(U, None), 1000.0)      # user: produce only
    fetch.update_quota(QuotaEntity(None, C), 2000.0)        # client id: fetch only
    assert produce.quota_for(f"User:{U}", C) == 1000
    assert fetch.quota_for(f"User:{U}", C) == 2000


def test_removing_a_quota_falls_back() -> None:
    m = manager()
    m.update_quota(QuotaEntity(None, C), 1000.0)
    m.update_quota(QuotaEntity(None, DEFAULT), 500.0)
    m.update_quota(QuotaEntity(None, C), None)
    assert m.quota_for(None, C) == 500
    m.update_quota(QuotaEntity(None, DEFAULT), None)
    assert not m.enabled and m.quota_for(None, C) is None


def test_unauthenticated_clients_are_the_anonymous_user() -> None:
    assert quota_user("User:ANONYMOUS") == quota_user(None) == "ANONYMOUS"
    assert quota_user("User:alice") == "alice"
    m = manager()
    m.update_quota(QuotaEntity(DEFAULT, None), 100.0)
    assert m.quota_for("User:ANONYMOUS", "x") == m.quota_for(None, "y") == 100
    m.update_quota(QuotaEntity("ANONYMOUS", None), 7.0)
    assert m.quota_for(None, "y") == 7


def test_names_are_matched_sanitized() -> None:
    m = manager()
    m.update_quota(QuotaEntity("a%20b", "c%2Fd"), 1.0)     # znode names of "a b", "c/d"
    assert m.quota_for("User:a b", "c/d") == 1


def test_request_quota_throttle_is_bounded_by_one_window() -> None:
    m = ClientQuotaManager(QuotaType.REQUEST, samples=11, window_seconds=1, max_throttle_ms=1000)
    m.update_quota(QuotaEntity(None, C), 1.0)
    assert m.record_and_throttle_ms(None, C, 1000.0, 0) == 1000


def test_max_value_in_window() -> None:
    m = manager(QuotaType.FETCH)
    assert m.max_value_in_window(None, C) is None
    m.update_quota(QuotaEntity(None, C), 1000.0)
    assert m.max_value_in_window(None, C) == 1000        # 1000/s x one window of 1 s
    kafka = ClientQuotaManager(QuotaType.FETCH, samples=11, window_seconds=1, kafka_rate=True)
    kafka.update_quota(QuotaEntity(None, C), 1000.0)
    assert kafka.max_value_in_window(None, C) == 10_000  # x (samples - 1) windows


def test_idle_sensors_expire() -> None:
    m = manager()
    m.update_quota(QuotaEntity(None, DEFAULT), 1.0)
    m.record_and_throttle_ms(None, C, 1, 0)
    assert m.expire_sensors(3_599_999) == 0
    assert m.expire_sensors(3_600_000) == 1


def test_new_clients_look_for_idle_sensors_once_per_check_period(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A stream of new client ids once scanned every sensor per new id (quadratic);
    # the scan now runs at most once per SENSOR_EXPIRY_CHECK_MS, and still drops the
    # sensors idle for an hour.
    m = manager()
    m.update_quota(QuotaEntity(None, DEFAULT), 1e9)
    scans: list[int] = []
    real = m.expire_sensors
    monkeypatch.setattr(m, "expire_sensors", lambda now: scans.append(now) or real(now))
    for i in range(1000):
        m.record_and_throttle_ms(None, f"old-{i}", 1, i)
    assert len(scans) == 1                     # the first new sensor past 64
    m.record_and_throttle_ms(None, "later", 1, SENSOR_EXPIRY_CHECK_MS - 1)
    assert len(scans) == 1
    m.record_and_throttle_ms(None, "fresh", 1, SENSOR_EXPIRY_MS + 1000)
    assert len(scans) == 2
    assert m.rate(None, "old-0", SENSOR_EXPIRY_MS + 1000) == 0.0
    assert len(m._sensors) == 2               # "later" (idle < 1 h) and "fresh"
