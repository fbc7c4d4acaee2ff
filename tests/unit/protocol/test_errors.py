"""protocol.errors: the error-code table against Kafka 3.9 and two stock clients' tables."""

from __future__ import annotations

import pickle

import pytest

from protocol.errors import ErrorCode, KafkaError, default_message, is_retriable, raise_for_code

# Kafka 3.9: the codes whose client exception extends RetriableException (directly or through
# InvalidMetadataException). Written out independently of the table under test.
KAFKA_39_RETRIABLE = {
    2, 3, 5, 6, 7, 9, 13, 14, 15, 16, 19, 20, 41, 51, 56, 70, 71, 72, 74, 75, 78, 80, 83, 84,
    88, 89, 100, 103, 106, 122, 123,
}


def test_codes_are_unique_and_contiguous_from_minus_one_to_128() -> None:
    # An IntEnum silently turns a repeated value into an alias; aliases show up only in
    # __members__, so equal lengths mean every row has its own code.
    assert len(ErrorCode.__members__) == len(ErrorCode)
    # Kafka 3.9's -1..127 and 4.0's 128 (INVALID_REGULAR_EXPRESSION, KIP-848)
    assert sorted(int(e) for e in ErrorCode) == list(range(-1, 129))


@pytest.mark.parametrize(
    ("name", "code", "retriable"),
    [
        ("UNKNOWN_SERVER_ERROR", -1, False),
        ("NONE", 0, False),
        ("OFFSET_OUT_OF_RANGE", 1, False),
        ("CORRUPT_MESSAGE", 2, True),
        ("UNKNOWN_TOPIC_OR_PARTITION", 3, True),
        ("LEADER_NOT_AVAILABLE", 5, True),
        ("NOT_LEADER_OR_FOLLOWER", 6, True),
        ("REQUEST_TIMED_OUT", 7, True),
        ("MESSAGE_TOO_LARGE", 10, False),
        ("STALE_CONTROLLER_EPOCH", 11, False),
        ("NOT_COORDINATOR", 16, True),
        ("NOT_ENOUGH_REPLICAS", 19, True),
        ("NOT_ENOUGH_REPLICAS_AFTER_APPEND", 20, True),
        ("REBALANCE_IN_PROGRESS", 27, False),
        ("UNSUPPORTED_VERSION", 35, False),
        ("TOPIC_ALREADY_EXISTS", 36, False),
        ("NOT_CONTROLLER", 41, True),
        ("INVALID_REQUEST", 42, False),
        ("OUT_OF_ORDER_SEQUENCE_NUMBER", 45, False),
        ("DUPLICATE_SEQUENCE_NUMBER", 46, False),
        ("INVALID_PRODUCER_EPOCH", 47, False),
        ("KAFKA_STORAGE_ERROR", 56, True),
        ("UNKNOWN_PRODUCER_ID", 59, False),
        ("FENCED_LEADER_EPOCH", 74, True),
        ("UNKNOWN_LEADER_EPOCH", 75, True),
        ("MEMBER_ID_REQUIRED", 79, False),
        ("PRODUCER_FENCED", 90, False),
        ("POSITION_OUT_OF_RANGE", 99, False),
        ("UNKNOWN_TOPIC_ID", 100, True),
        ("INCONSISTENT_TOPIC_ID", 103, True),
        ("VOTER_NOT_FOUND", 127, False),
        ("INVALID_REGULAR_EXPRESSION", 128, False),
    ],
)
def test_known_codes(name: str, code: int, retriable: bool) -> None:
    err = ErrorCode(code)
    assert err.name == name
    assert ErrorCode.from_name(name) is err
    assert err.retriable is retriable
    assert is_retriable(code) is retriable


def test_retriable_set_is_exactly_kafkas() -> None:
    assert {int(e) for e in ErrorCode if e.retriable} == KAFKA_39_RETRIABLE


def test_names_agree_with_librdkafka() -> None:
    # confluent_kafka.KafkaError exposes librdkafka's broker error codes under Kafka's names
    # (plus negative client-local codes, which use other names). Every shared name must carry
    # the same number, and most of the table must be shared.
    confluent_kafka = pytest.importorskip("confluent_kafka")
    shared = 0
    for err in ErrorCode:
        theirs = getattr(confluent_kafka.KafkaError, err.name, None)
        if theirs is None:
            continue
        shared += 1
        assert theirs == int(err), err.name
    assert shared >= 100


def test_codes_agree_with_kafka_python() -> None:
    kafka_errors = pytest.importorskip("kafka.errors")
    theirs: dict[int, bool] = {}
    for obj in vars(kafka_errors).values():
        if isinstance(obj, type) and issubclass(obj, kafka_errors.BrokerResponseError):
            if isinstance(getattr(obj, "errno", None), int):
                theirs[obj.errno] = bool(obj.retriable)
    assert theirs, "kafka-python's error table not found"
    for code, retriable in theirs.items():
        if code > 127:  # codes added after Kafka 3.9
            continue
        err = ErrorCode(code)  # every code kafka-python knows (up to 3.9's max) is in our table
        if code != 2:  # kafka-python marks CORRUPT_MESSAGE fatal; Kafka's client retries it
            assert err.retriable is retriable, err.name


def test_messages() -> None:
    assert ErrorCode.NONE.message is None
    assert default_message(0) is None
    for err in ErrorCode:
        if err is ErrorCode.NONE:
            continue
        assert err.message and err.message.endswith("."), err.name
    assert not ErrorCode.NONE.is_error
    assert ErrorCode.UNKNOWN_SERVER_ERROR.is_error


def test_unknown_codes_map_to_unknown_server_error() -> None:
    for code in (-2, 129, 999, 32767):
        assert ErrorCode.from_code(code) is ErrorCode.UNKNOWN_SERVER_ERROR
        assert not is_retriable(code)
        with pytest.raises(ValueError):
            ErrorCode(code)
    with pytest.raises(KeyError):
        ErrorCode.from_name("NOT_LEADER_FOR_PARTITION")  # the pre-2.6 name of code 6


def test_kafka_error_carries_code_and_message() -> None:
    exc = KafkaError(6)
    assert exc.code is ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert exc.retriable
    assert exc.message == ErrorCode.NOT_LEADER_OR_FOLLOWER.message
    assert str(exc).startswith("NOT_LEADER_OR_FOLLOWER (6): ")

    custom = KafkaError(ErrorCode.INVALID_REQUEST, "partition count must be positive")
    assert custom.code is ErrorCode.INVALID_REQUEST
    assert not custom.retriable
    assert str(custom) == "INVALID_REQUEST (42): partition count must be positive"

    again = pickle.loads(pickle.dumps(custom))
    assert (again.code, again.message) == (custom.code, custom.message)

    assert KafkaError(12345).code is ErrorCode.UNKNOWN_SERVER_ERROR


def test_raise_for_code() -> None:
    raise_for_code(0)
    with pytest.raises(KafkaError) as info:
        raise_for_code(35, "ApiVersions v9")
    assert info.value.code is ErrorCode.UNSUPPORTED_VERSION
    assert info.value.message == "ApiVersions v9"
