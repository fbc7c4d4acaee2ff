"""ZooKeeper paths and znode JSON, exactly as Apache Kafka 3.9 writes them
(kafka.zk.ZkData). Pure: bytes in, values out.

    /cluster/id                         {"version":"1","id":"<22-char base64url uuid>"}
    /controller            (ephemeral)  {"version":2,"brokerid":N,"timestamp":"<ms>","kraftControllerEpoch":-1}
    /controller_epoch                   "<epoch>" (decimal text); its znode version fences controller writes
    /brokers/ids/<id>      (ephemeral)  {"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},
                                         "endpoints":["PLAINTEXT://host:port"],"jmx_port":-1,"port":P,
                                         "host":"h","version":5,"timestamp":"<ms>"[,"rack":"r"]}
                                        the znode's czxid is the broker epoch
    /brokers/seqid                      empty; every set bumps its version: generated id = version + 1000
    /brokers/topics/<t>                 {"partitions":{"0":[1,2]},"topic_id":"<uuid>","adding_replicas":{},
                                         "removing_replicas":{},"version":3}
    /brokers/topics/<t>/partitions/<p>/state
                                        {"controller_epoch":E,"leader":L,"version":1,"leader_epoch":LE,"isr":[..]}
                                        (+"leader_recovery_state":1 only while RECOVERING); the znode
                                        version is the partition epoch (ZkVersion in UpdateMetadata)
    /config/topics/<t>                  {"version":1,"config":{"k":"v"}}
    /config/changes/config_change_<10-digit seq>  {"version":2,"entity_path":"topics/<t>"}
    /admin/delete_topics/<t>            empty
    /admin/reassign_partitions          {"version":1,"partitions":[{"topic":"t","partition":0,
                                         "replicas":[1,2]}]}  (the pre-KIP-455 reassignment API;
                                         the controller removes entries as they complete)
    /latest_producer_id_block           {"version":1,"broker":N,"block_start":"<first>","block_end":"<last>"}
    /log_dir_event_notification/log_dir_event_<10-digit seq>
                                        {"version":1,"broker":N,"event":1} (persistent, sequential;
                                        event 1 = LogDirFailure; the controller deletes it)
"""

from __future__ import annotations

import base64
import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

CLUSTER_ID = "/cluster/id"
CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
BROKER_IDS = "/brokers/ids"
BROKER_SEQID = "/brokers/seqid"
TOPICS = "/brokers/topics"
CONFIG_TOPICS = "/config/topics"
CONFIG_CHANGES = "/config/changes"
CONFIG_CHANGE_PREFIX = "config_change_"
DELETE_TOPICS = "/admin/delete_topics"
REASSIGN_PARTITIONS = "/admin/reassign_partitions"
PRODUCER_ID_BLOCK = "/latest_producer_id_block"
ISR_CHANGE = "/isr_change_notification"
LOG_DIR_EVENT = "/log_dir_event_notification"
LOG_DIR_EVENT_PREFIX = "log_dir_event_"
LOG_DIR_FAILURE_EVENT = 1                # LogDirEventNotificationHandler.LogDirFailureEvent

# Kafka's KafkaZkClient.createTopLevelPaths (persistent paths created at start-up).
PERSISTENT_PATHS = (
    "/consumers", BROKER_IDS, TOPICS, CONFIG_CHANGES, DELETE_TOPICS, BROKER_SEQID,
    ISR_CHANGE, PRODUCER_ID_BLOCK, LOG_DIR_EVENT,
    CONFIG_TOPICS, "/config/clients", "/config/users", "/config/brokers", "/config/ips",
)

RESERVED_BROKER_MAX_ID = 1000           # reserved.broker.max.id
INITIAL_CONTROLLER_EPOCH = 0            # KafkaController.InitialControllerEpoch
LEADER_DURING_DELETE = -2               # LeaderAndIsr.LeaderDuringDelete
NO_LEADER = -1

SECURITY_PROTOCOL_IDS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS}/{broker_id}"


def topic_path(topic: str) -> str:
    return f"{TOPICS}/{topic}"


def partitions_path(topic: str) -> str:
    return f"{TOPICS}/{topic}/partitions"


def partition_state_path(topic: str, partition: int) -> str:
    return f"{TOPICS}/{topic}/partitions/{partition}/state"


def topic_config_path(topic: str) -> str:
    return f"{CONFIG_TOPICS}/{topic}"


def delete_topic_path(topic: str) -> str:
    return f"{DELETE_TOPICS}/{topic}"


def _dumps(obj: Any) -> bytes:
    # Jackson's compact form, as Kafka writes it.
    return json.dumps(obj, separators=(",", ":")).encode()


def _loads(data: bytes | None) -> Any:
    if not data:
        return None
    return json.loads(data.decode())


def _now_ms() -> str:
    return str(int(time.time() * 1000))


# --- ids --------------------------------------------------------------------------------

def uuid_to_str(u: uuid.UUID) -> str:
    """Kafka's Uuid.toString: base64url of the 16 bytes, no padding (22 chars)."""
    return base64.urlsafe_b64encode(u.bytes).decode().rstrip("=")


def uuid_from_str(s: str) -> uuid.UUID:
    return uuid.UUID(bytes=base64.urlsafe_b64decode(s + "=" * (-len(s) % 4)))


def random_kafka_uuid() -> uuid.UUID:
    """Kafka's Uuid.randomUuid: never zero or the metadata topic id (1), and never
    one whose string form starts with '-' (it would look like a CLI flag)."""
    while True:
        u = uuid.uuid4()
        if u.int > 1 and not uuid_to_str(u).startswith("-"):
            return u


def encode_cluster_id(cluster_id: str) -> bytes:
    return _dumps({"version": "1", "id": cluster_id})


def decode_cluster_id(data: bytes) -> str:
    return str(_loads(data)["id"])


# --- controller -------------------------------------------------------------------------

def encode_controller(broker_id: int) -> bytes:
    return _dumps({"version": 2, "brokerid": broker_id, "timestamp": _now_ms(),
                   "kraftControllerEpoch": -1})


def decode_controller(data: bytes | None) -> int | None:
    obj = _loads(data)
    if obj is None:
        return None
    if isinstance(obj, int):  # version 0 stored just the id
        return obj
    return int(obj["brokerid"])


def encode_controller_epoch(epoch: int) -> bytes:
    return str(epoch).encode()


def decode_controller_epoch(data: bytes) -> int:
    return int(data.decode())


# --- brokers ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Endpoint:
    listener: str            # listener name, e.g. "PLAINTEXT"
    host: str
    port: int
    security_protocol: str = "PLAINTEXT"

    def connection_string(self) -> str:
        return f"{self.listener}://{self.host}:{self.port}"

    @staticmethod
    def parse(s: str, protocol_map: dict[str, str] | None = None) -> Endpoint:
        """'NAME://host:port' (host may be [v6] or empty)."""
        name, _, rest = s.partition("://")
        host, _, port = rest.rpartition(":")
        host = host.strip("[]")
        proto = (protocol_map or {}).get(name, name if name in SECURITY_PROTOCOL_IDS else "PLAINTEXT")
        return Endpoint(name, host, int(port), proto)


@dataclass(frozen=True)
class BrokerInfo:
    id: int
    endpoints: tuple[Endpoint, ...]
    rack: str | None = None
    epoch: int = -1          # czxid of /brokers/ids/<id>

    def endpoint(self, listener: str | None = None) -> Endpoint:
        """The endpoint for ``listener`` (default: PLAINTEXT if there is one, else the first)."""
        for ep in self.endpoints:
            if ep.listener == (listener or "PLAINTEXT"):
                return ep
        if listener is not None:
            raise KeyError(f"broker {self.id} has no listener {listener}")
        return self.endpoints[0]


def encode_broker(info: BrokerInfo) -> bytes:
    """BrokerIdZNode.encode, version 5 (the JSON key order follows Kafka's map)."""
    plain = next((e for e in info.endpoints if e.security_protocol == "PLAINTEXT"), None)
    obj: dict[str, Any] = {
        "features": {},
        "listener_security_protocol_map": {e.listener: e.security_protocol for e in info.endpoints},
        "endpoints": [e.connection_string() for e in info.endpoints],
        "jmx_port": -1,
        "port": plain.port if plain else -1,
        "host": plain.host if plain else None,
        "version": 5,
        "timestamp": _now_ms(),
    }
    if info.rack is not None:
        obj["rack"] = info.rack
    return _dumps(obj)


def decode_broker(broker_id: int, data: bytes, epoch: int = -1) -> BrokerInfo:
    obj = _loads(data)
    pmap = obj.get("listener_security_protocol_map") or {}
    eps = tuple(Endpoint.parse(s, pmap) for s in obj.get("endpoints") or [])
    if not eps and obj.get("host"):  # version 1 registrations: host/port only
        eps = (Endpoint("PLAINTEXT", obj["host"], int(obj["port"])),)
    return BrokerInfo(broker_id, eps, obj.get("rack"), epoch)


# --- topics -----------------------------------------------------------------------------

@dataclass
class TopicAssignment:
    topic_id: uuid.UUID | None
    partitions: dict[int, list[int]]
    adding: dict[int, list[int]] = field(default_factory=dict)
    removing: dict[int, list[int]] = field(default_factory=dict)


def encode_topic(a: TopicAssignment) -> bytes:
    def ser(m: dict[int, list[int]]) -> dict[str, list[int]]:
        return {str(p): list(r) for p, r in sorted(m.items())}
    obj: dict[str, Any] = {"partitions": ser(a.partitions)}
    if a.topic_id is not None:
        obj["topic_id"] = uuid_to_str(a.topic_id)
    obj.update({"adding_replicas": ser(a.adding), "removing_replicas": ser(a.removing),
                "version": 3})
    return _dumps(obj)


def decode_topic(data: bytes) -> TopicAssignment:
    obj = _loads(data) or {}

    def de(m: dict[str, list[int]] | None) -> dict[int, list[int]]:
        return {int(p): [int(b) for b in r] for p, r in (m or {}).items()}
    tid = obj.get("topic_id")
    return TopicAssignment(uuid_from_str(tid) if tid else None, de(obj.get("partitions")),
                           de(obj.get("adding_replicas")), de(obj.get("removing_replicas")))


@dataclass(frozen=True)
class LeaderIsr:
    """A partition's state znode plus its version (the partition epoch)."""
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    zk_version: int = 0
    leader_recovery_state: int = 0   # 0 RECOVERED, 1 RECOVERING

    def new_leader(self, leader: int, isr: tuple[int, ...] | list[int]) -> LeaderIsr:
        """Next state: a new leader (or new ISR) bumps the leader epoch."""
        return LeaderIsr(leader, self.leader_epoch + 1, tuple(isr), self.controller_epoch,
                         self.zk_version, self.leader_recovery_state)


def encode_partition_state(s: LeaderIsr, controller_epoch: int) -> bytes:
    obj: dict[str, Any] = {"controller_epoch": controller_epoch, "leader": s.leader,
                           "version": 1, "leader_epoch": s.leader_epoch, "isr": list(s.isr)}
    if s.leader_recovery_state != 0:
        obj["leader_recovery_state"] = s.leader_recovery_state
    return _dumps(obj)


def decode_partition_state(data: bytes, zk_version: int) -> LeaderIsr:
    obj = _loads(data)
    return LeaderIsr(int(obj["leader"]), int(obj["leader_epoch"]),
                     tuple(int(b) for b in obj["isr"]), int(obj["controller_epoch"]),
                     zk_version, int(obj.get("leader_recovery_state", 0)))


# --- configs and producer ids -----------------------------------------------------------

def encode_topic_config(configs: dict[str, str]) -> bytes:
    return _dumps({"version": 1, "config": dict(configs)})


def decode_topic_config(data: bytes | None) -> dict[str, str]:
    obj = _loads(data) or {}
    return {str(k): str(v) for k, v in (obj.get("config") or {}).items()}


def encode_config_change(topic: str) -> bytes:
    return _dumps({"version": 2, "entity_path": f"topics/{topic}"})


def decode_config_change(data: bytes | None) -> str | None:
    """-> the topic named by a change notification (None if not a topic change)."""
    obj = _loads(data) or {}
    if obj.get("version") == 1:  # {"version":1,"entity_type":"topics","entity_name":"t"}
        return obj.get("entity_name") if obj.get("entity_type") == "topics" else None
    kind, _, name = str(obj.get("entity_path", "")).partition("/")
    return name if kind == "topics" and name else None


def encode_producer_id_block(broker_id: int, first: int, last: int) -> bytes:
    return _dumps({"version": 1, "broker": broker_id, "block_start": str(first),
                   "block_end": str(last)})


def decode_producer_id_block(data: bytes | None) -> tuple[int, int] | None:
    obj = _loads(data)
    if obj is None:
        return None
    return int(obj["block_start"]), int(obj["block_end"])


# --- log dir failures (KIP-112) ---------------------------------------------------------

def encode_log_dir_event(broker_id: int) -> bytes:
    return _dumps({"version": 1, "broker": broker_id, "event": LOG_DIR_FAILURE_EVENT})


def decode_log_dir_event(data: bytes | None) -> int | None:
    """-> the broker a log dir event names (None when unreadable)."""
    try:
        obj = _loads(data) or {}
        return int(obj["broker"])
    except (ValueError, KeyError, TypeError):
        return None


# --- partition reassignment -------------------------------------------------------------

def encode_reassignment(targets: dict[tuple[str, int], list[int]]) -> bytes:
    return _dumps({"version": 1, "partitions": [
        {"topic": t, "partition": p, "replicas": list(r)} for (t, p), r in sorted(targets.items())]})


def decode_reassignment(data: bytes | None) -> dict[tuple[str, int], list[int]]:
    obj = _loads(data) or {}
    return {(str(e["topic"]), int(e["partition"])): [int(b) for b in e["replicas"]]
            for e in obj.get("partitions") or []}
