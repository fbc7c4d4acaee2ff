"""Broker configuration: server.properties with Kafka's key names and defaults.

A key ``log.segment.bytes`` is the attribute ``log_segment_bytes``: every Kafka
key is dotted lower case, so the mapping is mechanical and lives in one place
(``key_of``). Parsing follows java.util.Properties closely enough for Kafka's
files: ``key=value`` or ``key: value``, ``#``/``!`` comments, backslash line
continuations.

Rules (as Kafka's KafkaConfig):
* an unknown key is a warning, never an error (tools share files);
* a value that does not parse or is out of range stops start-up with a
  ConfigError naming the key and the value;
* time keys with several units resolve ms > minutes > hours
  (``log.retention.*``, ``log.roll.*``), as Kafka does.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


class ConfigError(ValueError):
    """A bad configuration value; the message names the key and the value."""


def key_of(attr: str) -> str:
    return attr.replace("_", ".")


def _positive(v: int) -> bool:
    return v > 0


def _non_negative(v: int) -> bool:
    return v >= 0


def _at_least(n: int) -> Any:
    def check(v: int) -> bool:
        return v >= n
    check.__doc__ = f">= {n}"
    return check


def _one_of(*choices: str) -> Any:
    def check(v: str) -> bool:
        return v in choices
    check.__doc__ = f"one of {', '.join(choices)}"
    return check


def _one_of_ci(*choices: str) -> Any:
    def check(v: str) -> bool:
        return v.strip().lower() in choices
    check.__doc__ = f"one of {', '.join(choices)} (any case)"
    return check


def _protocol_list(v: str) -> bool:
    """group.coordinator.rebalance.protocols: a comma list of classic, consumer (and
    Kafka's share, accepted and unused) that includes classic."""
    names = [n.strip().lower() for n in v.split(",") if n.strip()]
    return "classic" in names and all(n in ("classic", "consumer", "share") for n in names)


def _assignor_list(v: str) -> bool:
    """group.consumer.assignors: a non-empty comma list of uniform, range (or Kafka's
    class names org.apache.kafka.coordinator.group.assignor.UniformAssignor/RangeAssignor)."""
    names = [n.strip() for n in v.split(",") if n.strip()]
    known = {"uniform", "range", "org.apache.kafka.coordinator.group.assignor.UniformAssignor",
             "org.apache.kafka.coordinator.group.assignor.RangeAssignor"}
    return bool(names) and all(n in known for n in names)


def _host_counts(v: str) -> bool:
    """max.connections.per.ip.overrides: ``host:count,...`` (broker/network/; issue 17)."""
    for item in (i.strip() for i in v.split(",")):
        host, sep, count = item.rpartition(":")
        if item and (not sep or not host.strip("[] ") or not count.strip().isdigit()):
            return False
    return True


def _host_port(v: str) -> bool:
    """prometheus.listener: ``HOST:PORT`` (broker/metrics/; ours)."""
    host, sep, port = v.rpartition(":")
    return bool(sep) and port.isdigit() and 0 <= int(port) <= 65535 \
        and not any(c.isspace() or c == "/" for c in host)


def _valid(check: Any, doc: str = "") -> dict[str, Any]:
    return {"check": check, "doc": doc or (check.__doc__ or check.__name__.strip("_"))}


MiB = 1024 * 1024


@dataclass(frozen=True)
class BrokerConfig:
    # ---- identity and networking
    broker_id: int = field(default=-1, metadata=_valid(_at_least(-1)))
    broker_rack: str | None = None
    listeners: str = "PLAINTEXT://:9092"
    advertised_listeners: str | None = None
    socket_request_max_bytes: int = field(default=100 * MiB, metadata=_valid(_positive))
    # ours, not Kafka's: which plaintext connections get fetch data by sendfile
    # (broker/network/frame_stream.py, ``zero_copy_for``): auto = all but loopback peers
    fetch_zero_copy: str = field(default="auto", metadata=_valid(_one_of("auto", "true",
                                                                         "false")))
    connections_max_idle_ms: int = field(default=600_000, metadata=_valid(_positive))
    request_timeout_ms: int = field(default=30_000, metadata=_valid(_positive))
    # ---- connection limits and request queueing (broker/network/, issue 17; Kafka's
    # defaults: no limit). max.connections.per.ip.overrides is "host:count,host:count".
    max_connections: int = field(default=2_147_483_647, metadata=_valid(_non_negative))
    max_connections_per_ip: int = field(default=2_147_483_647, metadata=_valid(_non_negative))
    max_connections_per_ip_overrides: str = field(default="", metadata=_valid(
        _host_counts, "host:count[,host:count...] with counts >= 0"))
    max_connection_creation_rate: int = field(default=2_147_483_647,
                                              metadata=_valid(_non_negative))
    queued_max_requests: int = field(default=500, metadata=_valid(_positive))
    queued_max_request_bytes: int = -1          # -1: no bound on bytes of queued requests
    # ---- quotas (broker/quotas/, issue 17): rates are measured over window.num
    # samples of window.size.seconds each, as Kafka's ClientQuotaManager
    quota_window_num: int = field(default=11, metadata=_valid(_at_least(2)))
    quota_window_size_seconds: int = field(default=1, metadata=_valid(_positive))
    replication_quota_window_num: int = field(default=11, metadata=_valid(_at_least(2)))
    replication_quota_window_size_seconds: int = field(default=1, metadata=_valid(_positive))
    # ---- ZooKeeper
    zookeeper_connect: str = "127.0.0.1:2181"
    zookeeper_session_timeout_ms: int = field(default=18_000, metadata=_valid(_positive))
    zookeeper_connection_timeout_ms: int | None = None
    # ---- topics
    num_partitions: int = field(default=1, metadata=_valid(_positive))
    default_replication_factor: int = field(default=1, metadata=_valid(_positive))
    auto_create_topics_enable: bool = True
    delete_topic_enable: bool = True
    message_max_bytes: int = field(default=1_048_588, metadata=_valid(_non_negative))
    min_insync_replicas: int = field(default=1, metadata=_valid(_positive))
    unclean_leader_election_enable: bool = False
    replica_lag_time_max_ms: int = field(default=30_000, metadata=_valid(_positive))
    offsets_topic_num_partitions: int = field(default=50, metadata=_valid(_positive))
    offsets_topic_replication_factor: int = field(default=3, metadata=_valid(_positive))
    # __transaction_state, when Metadata/FindCoordinator auto-create it (Kafka's defaults)
    transaction_state_log_num_partitions: int = field(default=50, metadata=_valid(_positive))
    transaction_state_log_replication_factor: int = field(default=3,
                                                          metadata=_valid(_positive))
    transaction_state_log_min_isr: int = field(default=2, metadata=_valid(_positive))
    group_initial_rebalance_delay_ms: int = field(default=3000, metadata=_valid(_non_negative))
    group_min_session_timeout_ms: int = field(default=6000, metadata=_valid(_non_negative))
    group_max_session_timeout_ms: int = field(default=1_800_000, metadata=_valid(_positive))
    group_max_size: int = field(default=2_147_483_647, metadata=_valid(_positive))
    offsets_retention_minutes: int = field(default=10_080, metadata=_valid(_positive))
    offsets_retention_check_interval_ms: int = field(default=600_000, metadata=_valid(_positive))
    offset_metadata_max_bytes: int = field(default=4096, metadata=_valid(_non_negative))
    offsets_commit_timeout_ms: int = field(default=5000, metadata=_valid(_positive))
    # ---- consumer groups of the KIP-848 protocol (coordinator/group/consumer/; issue 19):
    # Kafka 4.0's group.consumer.* keys and defaults; the session timeout and heartbeat
    # interval are the broker's (the client sends neither). Cross-key rules (min <= value
    # <= max, heartbeat < session) are checked by check_consumer_group_bounds.
    group_coordinator_rebalance_protocols: str = field(default="classic,consumer",
                                                       metadata=_valid(
        _protocol_list, "a comma list of classic, consumer (share) that includes classic"))
    group_consumer_session_timeout_ms: int = field(default=45_000, metadata=_valid(_positive))
    group_consumer_min_session_timeout_ms: int = field(default=45_000,
                                                       metadata=_valid(_positive))
    group_consumer_max_session_timeout_ms: int = field(default=60_000,
                                                       metadata=_valid(_positive))
    group_consumer_heartbeat_interval_ms: int = field(default=5_000, metadata=_valid(_positive))
    group_consumer_min_heartbeat_interval_ms: int = field(default=5_000,
                                                          metadata=_valid(_positive))
    group_consumer_max_heartbeat_interval_ms: int = field(default=15_000,
                                                          metadata=_valid(_positive))
    group_consumer_max_size: int = field(default=2_147_483_647, metadata=_valid(_positive))
    group_consumer_assignors: str = field(default="uniform,range",
                                          metadata=_valid(
        _assignor_list, "a non-empty comma list of uniform, range"))
    group_consumer_migration_policy: str = field(default="bidirectional", metadata=_valid(
        _one_of_ci("disabled", "upgrade", "downgrade", "bidirectional")))
    # ---- controller: preferred-leader balancing
    auto_leader_rebalance_enable: bool = True
    leader_imbalance_check_interval_seconds: int = field(default=300, metadata=_valid(_positive))
    leader_imbalance_per_broker_percentage: int = field(default=10,
                                                        metadata=_valid(_non_negative))
    # ---- log
    log_dirs: str | None = None
    log_dir: str = "/tmp/kafka-logs"
    log_segment_bytes: int = field(default=1024 * MiB, metadata=_valid(_at_least(14)))
    log_roll_ms: int | None = None
    log_roll_hours: int = field(default=168, metadata=_valid(_positive))
    log_retention_ms: int | None = None
    log_retention_minutes: int | None = None
    log_retention_hours: int = 168
    log_retention_bytes: int = -1
    log_retention_check_interval_ms: int = field(default=300_000, metadata=_valid(_positive))
    log_index_interval_bytes: int = field(default=4096, metadata=_valid(_non_negative))
    log_index_size_max_bytes: int = field(default=10 * MiB, metadata=_valid(_at_least(8)))
    log_flush_interval_messages: int = field(default=(1 << 63) - 1, metadata=_valid(_positive))
    log_flush_interval_ms: int | None = None
    log_flush_offset_checkpoint_interval_ms: int = 60_000
    log_message_timestamp_type: str = field(
        default="CreateTime", metadata=_valid(_one_of("CreateTime", "LogAppendTime")))
    # CreateTime bounds (topic keys message.timestamp.*; LONG_MAX: none)
    log_message_timestamp_before_max_ms: int = field(default=(1 << 63) - 1,
                                                     metadata=_valid(_non_negative))
    log_message_timestamp_after_max_ms: int = field(default=(1 << 63) - 1,
                                                    metadata=_valid(_non_negative))
    log_message_timestamp_difference_max_ms: int = field(default=(1 << 63) - 1,
                                                         metadata=_valid(_non_negative))
    log_cleanup_policy: str = field(default="delete", metadata=_valid(_one_of("delete", "compact", "delete,compact", "compact,delete")))
    compression_type: str = field(default="producer", metadata=_valid(
        _one_of("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd")))
    # ---- log cleaner (compaction of cleanup.policy=compact topics)
    log_cleaner_enable: bool = True
    log_cleaner_dedupe_buffer_size: int = field(default=128 * MiB, metadata=_valid(_positive))
    log_cleaner_io_buffer_load_factor: float = 0.9
    log_cleaner_backoff_ms: int = field(default=15_000, metadata=_valid(_positive))
    # ---- producers and transactions
    transactional_id_expiration_ms: int = 604_800_000
    transaction_max_timeout_ms: int = field(default=900_000, metadata=_valid(_positive))
    transaction_abort_timed_out_transaction_cleanup_interval_ms: int = field(
        default=10_000, metadata=_valid(_positive))
    transaction_remove_expired_transaction_cleanup_interval_ms: int = field(
        default=3_600_000, metadata=_valid(_positive))
    producer_id_expiration_ms: int = 86_400_000
    transaction_partition_verification_enable: bool = True   # KIP-890 part 1
    # ours, not Kafka's: EndTxn is answered once the markers are written and the
    # transaction is CompleteCommit / CompleteAbort (commit = visible); false answers once
    # PrepareCommit / PrepareAbort is durable, as Kafka (coordinator/transaction/coordinator.py)
    transaction_end_await_markers: bool = True
    # ---- operations
    controlled_shutdown_enable: bool = True
    # Prometheus metrics endpoint (broker/metrics/; ours, not Kafka's): HOST:PORT, off if unset
    prometheus_listener: str | None = field(default=None, metadata=_valid(
        _host_port, "HOST:PORT with a port 0-65535"))
    # ---- security: listeners' protocols, TLS, SASL (broker/security/). Every ssl.* and
    # sasl.* key may be given per listener as listener.name.<listener>.<key>
    # (``BrokerConfig.for_listener``); the JAAS config only that way:
    # listener.name.<listener>.<mechanism>.sasl.jaas.config.
    listener_security_protocol_map: str = (
        "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL")
    inter_broker_listener_name: str | None = None
    security_inter_broker_protocol: str = field(default="PLAINTEXT", metadata=_valid(
        _one_of("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")))
    control_plane_listener_name: str | None = None
    sasl_enabled_mechanisms: str = "GSSAPI"
    sasl_mechanism_inter_broker_protocol: str = "GSSAPI"
    sasl_server_max_receive_size: int = field(default=524_288, metadata=_valid(_positive))
    connections_max_reauth_ms: int = field(default=0, metadata=_valid(_non_negative))
    connection_failed_authentication_delay_ms: int = field(default=100,
                                                           metadata=_valid(_non_negative))
    ssl_keystore_type: str = "JKS"
    ssl_keystore_location: str | None = None
    ssl_keystore_password: str | None = None
    ssl_keystore_key: str | None = None
    ssl_keystore_certificate_chain: str | None = None
    ssl_key_password: str | None = None
    ssl_truststore_type: str = "JKS"
    ssl_truststore_location: str | None = None
    ssl_truststore_password: str | None = None
    ssl_truststore_certificates: str | None = None
    ssl_client_auth: str = field(default="none", metadata=_valid(
        _one_of("required", "requested", "none")))
    ssl_enabled_protocols: str = "TLSv1.2,TLSv1.3"
    ssl_protocol: str = "TLSv1.3"
    ssl_cipher_suites: str | None = None
    ssl_principal_mapping_rules: str = "DEFAULT"
    ssl_endpoint_identification_algorithm: str | None = "https"
    # listener.name.<listener>.<key> -> raw value (read through for_listener)
    listener_overrides: dict[str, str] = field(default_factory=dict, compare=False)
    # issue 18: the layers this config was made from (broker/dynamic_config/layers.py's
    # DynamicLayers: static config + /config/brokers entries); None for a static config
    dynamic: Any = field(default=None, compare=False, repr=False)
    # ---- security: ACLs (broker/acl/authorizer.py); "" = no authorizer
    authorizer_class_name: str = ""
    super_users: str | None = None
    allow_everyone_if_no_acl_found: bool = False
    log_level: str = field(default="INFO", metadata=_valid(
        _one_of("TRACE", "DEBUG", "INFO", "WARN", "WARNING", "ERROR")))

    # ---- derived values (Kafka's precedence rules)
    @property
    def log_dir_list(self) -> list[str]:
        raw = self.log_dirs if self.log_dirs else self.log_dir
        return [d.strip() for d in raw.split(",") if d.strip()]

    @property
    def retention_ms(self) -> int:
        if self.log_retention_ms is not None:
            return self.log_retention_ms
        if self.log_retention_minutes is not None:
            return self.log_retention_minutes * 60_000
        return self.log_retention_hours * 3_600_000

    @property
    def roll_ms(self) -> int:
        if self.log_roll_ms is not None:
            return self.log_roll_ms
        return self.log_roll_hours * 3_600_000

    @property
    def zk_connection_timeout_ms(self) -> int:
        if self.zookeeper_connection_timeout_ms is not None:
            return self.zookeeper_connection_timeout_ms
        return self.zookeeper_session_timeout_ms

    def for_listener(self, listener: str, key: str) -> Any:
        """``key`` as ``listener`` sees it: ``listener.name.<listener>.<key>`` when
        set (parsed and checked as the plain key), else the plain key's value."""
        name = key
        raw = self.listener_overrides.get(f"listener.name.{listener.lower()}.{name}")
        f = _FIELDS.get(name)
        if raw is None:
            return getattr(self, f.name) if f is not None else None
        return _parse_value(f"listener.name.{listener.lower()}.{name}", raw, f) \
            if f is not None else raw

    @classmethod
    def from_properties(cls, props: dict[str, str]) -> BrokerConfig:
        known = {k: f for k, f in _FIELDS.items()
                 if f.name not in ("listener_overrides", "dynamic")}
        values: dict[str, Any] = {}
        overrides: dict[str, str] = {}
        for key, raw in props.items():
            if key.startswith("listener.name."):
                # the listener part is case-insensitive, as Kafka's ListenerName
                _, _, rest = key.partition("listener.name.")
                listener, dot, sub = rest.partition(".")
                if not dot or not sub:
                    raise ConfigError(f"Invalid configuration key {key!r}: expected "
                                      "listener.name.<listener>.<key>")
                overrides[f"listener.name.{listener.lower()}.{sub}"] = raw
                continue
            f = known.get(key)
            if f is None:
                log.warning("unknown configuration key %r (value %r) ignored", key, raw)
                continue
            values[f.name] = _parse_value(key, raw, f)
        config = cls(**values, listener_overrides=overrides)
        check_consumer_group_bounds(config)
        for key, raw in overrides.items():      # typed keys are checked now, not on first use
            name = key.split(".", 3)[3]
            if name in _FIELDS:
                _parse_value(key, raw, _FIELDS[name])
        return config

    @classmethod
    def load(cls, path: str | Path, overrides: list[str] | None = None) -> BrokerConfig:
        props = read_properties(Path(path).read_text(encoding="utf-8"))
        for item in overrides or []:
            if "=" not in item:
                raise ConfigError(f"--override {item!r}: expected key=value")
            k, v = item.split("=", 1)
            props[k.strip()] = v.strip()
        return cls.from_properties(props)


def check_consumer_group_bounds(config: BrokerConfig) -> None:
    """The group.consumer.* cross-key rules (Kafka 4.0's GroupCoordinatorConfig): each
    of the session timeout and heartbeat interval within its min/max, and the heartbeat
    interval below the session timeout. ConfigError naming the keys and values."""
    for what in ("session.timeout.ms", "heartbeat.interval.ms"):
        key, lo_key, hi_key = (f"group.consumer.{what}", f"group.consumer.min.{what}",
                               f"group.consumer.max.{what}")
        value, lo, hi = (getattr(config, k.replace(".", "_")) for k in (key, lo_key, hi_key))
        if lo > hi:
            raise ConfigError(f"{lo_key}={lo} is greater than {hi_key}={hi}")
        if not lo <= value <= hi:
            raise ConfigError(f"Invalid value {value} for configuration {key}: must be "
                              f"between {lo_key}={lo} and {hi_key}={hi}")
    if config.group_consumer_heartbeat_interval_ms >= config.group_consumer_session_timeout_ms:
        raise ConfigError(
            f"group.consumer.heartbeat.interval.ms={config.group_consumer_heartbeat_interval_ms}"
            f" must be less than group.consumer.session.timeout.ms="
            f"{config.group_consumer_session_timeout_ms}")


_INT_RE = re.compile(r"^[+-]?\d+$")
_FIELDS: dict[str, dataclasses.Field[Any]] = {
    key_of(f.name): f for f in dataclasses.fields(BrokerConfig)}


def _parse_value(key: str, raw: str, f: dataclasses.Field[Any]) -> Any:
    typ = str(f.type)
    text = raw.strip()
    nullable = "None" in typ
    if nullable and text == "":
        return None
    if typ.startswith("int"):
        if not _INT_RE.match(text):
            raise ConfigError(f"Invalid value {raw!r} for configuration {key}: not a number")
        value: Any = int(text)
    elif typ.startswith("float"):
        try:
            value = float(text)
        except ValueError:
            raise ConfigError(f"Invalid value {raw!r} for configuration {key}: "
                              "not a number") from None
    elif typ.startswith("bool"):
        if text.lower() not in ("true", "false"):
            raise ConfigError(f"Invalid value {raw!r} for configuration {key}: "
                              "expected true or false")
        value = text.lower() == "true"
    else:
        value = text
    check = f.metadata.get("check")
    if check is not None and not check(value):
        raise ConfigError(f"Invalid value {raw!r} for configuration {key}: "
                          f"must be {f.metadata['doc']}")
    return value


def read_properties(text: str) -> dict[str, str]:
    """Parse java.util.Properties text (the subset Kafka's files use)."""
    props: dict[str, str] = {}
    pending = ""
    for line in text.splitlines():
        stripped = line.strip()
        if not pending and (not stripped or stripped[0] in "#!"):
            continue
        if stripped.endswith("\\") and not stripped.endswith("\\\\"):
            pending += stripped[:-1]
            continue
        stripped = pending + stripped
        pending = ""
        m = re.match(r"^([^=:\s]+)\s*[=:\s]\s*(.*)$", stripped)
        if m is None:
            props[stripped] = ""
        else:
            props[m.group(1)] = m.group(2)
    return props
