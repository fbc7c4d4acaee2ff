"""Kafka API keys: the int16 ``request_api_key`` in every request header.

All 88 keys Apache Kafka 3.9 defines (0 PRODUCE .. 87 READ_SHARE_GROUP_STATE_SUMMARY); the keys
are contiguous. Member names are Kafka's own (``ApiKeys`` enum); ``wire_name`` is the message
name used in Kafka's schemas and in our ``protocol.spec`` modules ("Produce", "LeaderAndIsr").
Which keys and versions pybroker actually serves is decided by the broker's handler registry,
not here: many of these (KRaft quorum, share groups, telemetry) are listed only so that a
request carrying them can be named in logs and answered with UNSUPPORTED_VERSION.

``PybrokerApiKey``: pybroker's own APIs, keys from ``PYBROKER_API_KEY_BASE`` (10000) up,
far from Kafka's range; their schemas are in ``protocol.spec.pybroker`` and brokers
never advertise them in ApiVersions (only our own client sends them).
"""

from __future__ import annotations

from enum import IntEnum


class ApiKey(IntEnum):
    PRODUCE                         = 0
    FETCH                           = 1
    LIST_OFFSETS                    = 2
    METADATA                        = 3
    LEADER_AND_ISR                  = 4
    STOP_REPLICA                    = 5
    UPDATE_METADATA                 = 6
    CONTROLLED_SHUTDOWN             = 7
    OFFSET_COMMIT                   = 8
    OFFSET_FETCH                    = 9
    FIND_COORDINATOR                = 10
    JOIN_GROUP                      = 11
    HEARTBEAT                       = 12
    LEAVE_GROUP                     = 13
    SYNC_GROUP                      = 14
    DESCRIBE_GROUPS                 = 15
    LIST_GROUPS                     = 16
    SASL_HANDSHAKE                  = 17
    API_VERSIONS                    = 18
    CREATE_TOPICS                   = 19
    DELETE_TOPICS                   = 20
    DELETE_RECORDS                  = 21
    INIT_PRODUCER_ID                = 22
    OFFSET_FOR_LEADER_EPOCH         = 23
    ADD_PARTITIONS_TO_TXN           = 24
    ADD_OFFSETS_TO_TXN              = 25
    END_TXN                         = 26
    WRITE_TXN_MARKERS               = 27
    TXN_OFFSET_COMMIT               = 28
    DESCRIBE_ACLS                   = 29
    CREATE_ACLS                     = 30
    DELETE_ACLS                     = 31
    DESCRIBE_CONFIGS                = 32
    ALTER_CONFIGS                   = 33
    ALTER_REPLICA_LOG_DIRS          = 34
    DESCRIBE_LOG_DIRS               = 35
    SASL_AUTHENTICATE               = 36
    CREATE_PARTITIONS               = 37
    CREATE_DELEGATION_TOKEN         = 38
    RENEW_DELEGATION_TOKEN          = 39
    EXPIRE_DELEGATION_TOKEN         = 40
    DESCRIBE_DELEGATION_TOKEN       = 41
    DELETE_GROUPS                   = 42
    ELECT_LEADERS                   = 43
    INCREMENTAL_ALTER_CONFIGS       = 44
    ALTER_PARTITION_REASSIGNMENTS   = 45
    LIST_PARTITION_REASSIGNMENTS    = 46
    OFFSET_DELETE                   = 47
    DESCRIBE_CLIENT_QUOTAS          = 48
    ALTER_CLIENT_QUOTAS             = 49
    DESCRIBE_USER_SCRAM_CREDENTIALS = 50
    ALTER_USER_SCRAM_CREDENTIALS    = 51
    VOTE                            = 52
    BEGIN_QUORUM_EPOCH              = 53
    END_QUORUM_EPOCH                = 54
    DESCRIBE_QUORUM                 = 55
    ALTER_PARTITION                 = 56
    UPDATE_FEATURES                 = 57
    ENVELOPE                        = 58
    FETCH_SNAPSHOT                  = 59
    DESCRIBE_CLUSTER                = 60
    DESCRIBE_PRODUCERS              = 61
    BROKER_REGISTRATION             = 62
    BROKER_HEARTBEAT                = 63
    UNREGISTER_BROKER               = 64
    DESCRIBE_TRANSACTIONS           = 65
    LIST_TRANSACTIONS               = 66
    ALLOCATE_PRODUCER_IDS           = 67
    CONSUMER_GROUP_HEARTBEAT        = 68
    CONSUMER_GROUP_DESCRIBE         = 69
    CONTROLLER_REGISTRATION         = 70
    GET_TELEMETRY_SUBSCRIPTIONS     = 71
    PUSH_TELEMETRY                  = 72
    ASSIGN_REPLICAS_TO_DIRS         = 73
    LIST_CLIENT_METRICS_RESOURCES   = 74
    DESCRIBE_TOPIC_PARTITIONS       = 75
    SHARE_GROUP_HEARTBEAT           = 76
    SHARE_GROUP_DESCRIBE            = 77
    SHARE_FETCH                     = 78
    SHARE_ACKNOWLEDGE               = 79
    ADD_RAFT_VOTER                  = 80
    REMOVE_RAFT_VOTER               = 81
    UPDATE_RAFT_VOTER               = 82
    INITIALIZE_SHARE_GROUP_STATE    = 83
    READ_SHARE_GROUP_STATE          = 84
    WRITE_SHARE_GROUP_STATE         = 85
    DELETE_SHARE_GROUP_STATE        = 86
    READ_SHARE_GROUP_STATE_SUMMARY  = 87

    @property
    def wire_name(self) -> str:
        """The CamelCase message name without the Request/Response suffix."""
        return "".join(part.capitalize() for part in self.name.split("_"))

    @classmethod
    def from_wire_name(cls, wire_name: str) -> ApiKey:
        """``"OffsetForLeaderEpoch"`` -> OFFSET_FOR_LEADER_EPOCH (KeyError if unknown)."""
        return _BY_WIRE_NAME[wire_name]


_BY_WIRE_NAME: dict[str, ApiKey] = {key.wire_name: key for key in ApiKey}


PYBROKER_API_KEY_BASE = 10000


class PybrokerApiKey(IntEnum):
    """pybroker's own APIs (not Kafka's; never in ApiVersions)."""

    DESCRIBE_WHY                    = 10000

    @property
    def wire_name(self) -> str:
        return "".join(part.capitalize() for part in self.name.split("_"))


def is_pybroker_api(api_key: int) -> bool:
    return api_key >= PYBROKER_API_KEY_BASE


def api_name(api_key: int) -> str:
    """A readable name for any api key, known or not (for logs): ``"Produce"``, ``"Unknown(999)"``."""
    try:
        return ApiKey(api_key).wire_name
    except ValueError:
        pass
    try:
        return PybrokerApiKey(api_key).wire_name
    except ValueError:
        return f"Unknown({api_key})"
