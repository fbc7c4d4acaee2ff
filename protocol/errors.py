"""Kafka error codes: one table of code, NAME, retriable, default message.

Every code Apache Kafka 3.9 defines, from -1 (UNKNOWN_SERVER_ERROR) to 127 (VOTER_NOT_FOUND),
and Kafka 4.0's 128 (INVALID_REGULAR_EXPRESSION, for KIP-848 consumer groups); the codes are
contiguous. Names are the wire names clients print (Kafka's ``Errors`` enum);
``retriable`` is True exactly where Kafka's client exception for the code is a
``RetriableException`` (a client may retry the same request, usually after refreshing
metadata). Note that CORRUPT_MESSAGE (2) is retriable in Kafka even though some clients
(kafka-python) treat it as fatal. The default messages are our own wording; a handler may send
a more specific ``error_message`` where the response has one.

Usage::

    ErrorCode.NOT_LEADER_OR_FOLLOWER.retriable         # True
    ErrorCode.from_code(6)                              # unknown codes -> UNKNOWN_SERVER_ERROR
    raise KafkaError(ErrorCode.INVALID_REQUEST, "bad partition count")
"""

# The table below is kept one row per code for reading; its lines are long on purpose.
# ruff: noqa: E501

from __future__ import annotations

from enum import IntEnum
from typing import cast


class ErrorCode(IntEnum):
    """A Kafka error code; each member carries ``retriable`` and ``message``."""

    retriable: bool
    message: str | None  # None only for NONE, as on the wire (a null error_message)

    def __new__(cls, code: int, retriable: bool, message: str | None) -> ErrorCode:
        obj = int.__new__(cls, code)
        obj._value_ = code
        obj.retriable = retriable
        obj.message = message
        return obj

    # NAME                                = (code, retriable, default message)
    UNKNOWN_SERVER_ERROR                  = ( -1, False, "The server hit an unexpected error while handling the request.")
    NONE                                  = (  0, False, None)
    OFFSET_OUT_OF_RANGE                   = (  1, False, "The requested offset is outside the range of offsets the server holds.")
    CORRUPT_MESSAGE                       = (  2, True,  "The message failed its CRC check, has an invalid size, has a null key on a compacted topic, or is otherwise corrupt.")
    UNKNOWN_TOPIC_OR_PARTITION            = (  3, True,  "This server does not host the requested topic-partition.")
    INVALID_FETCH_SIZE                    = (  4, False, "The requested fetch size is not valid.")
    LEADER_NOT_AVAILABLE                  = (  5, True,  "The topic-partition has no leader right now; a leader election is in progress.")
    NOT_LEADER_OR_FOLLOWER                = (  6, True,  "This broker is not the partition's leader (leader-only requests) or not one of its replicas (others).")
    REQUEST_TIMED_OUT                     = (  7, True,  "The request timed out.")
    BROKER_NOT_AVAILABLE                  = (  8, False, "The broker is not available.")
    REPLICA_NOT_AVAILABLE                 = (  9, True,  "The replica for the requested topic-partition is not available.")
    MESSAGE_TOO_LARGE                     = ( 10, False, "A message in the request is larger than the largest the server accepts.")
    STALE_CONTROLLER_EPOCH                = ( 11, False, "The request came from a controller that has since been replaced.")
    OFFSET_METADATA_TOO_LARGE             = ( 12, False, "The metadata attached to the offset commit is too large.")
    NETWORK_EXCEPTION                     = ( 13, True,  "The connection closed before a response was received.")
    COORDINATOR_LOAD_IN_PROGRESS          = ( 14, True,  "The coordinator is still loading its state and cannot serve requests yet.")
    COORDINATOR_NOT_AVAILABLE             = ( 15, True,  "The coordinator is not available.")
    NOT_COORDINATOR                       = ( 16, True,  "This broker is not the coordinator for the group or transactional id.")
    INVALID_TOPIC_EXCEPTION               = ( 17, False, "The request tried to operate on an invalid topic.")
    RECORD_LIST_TOO_LARGE                 = ( 18, False, "The record batch is larger than the configured segment size.")
    NOT_ENOUGH_REPLICAS                   = ( 19, True,  "Rejected: fewer in-sync replicas than min.insync.replicas.")
    NOT_ENOUGH_REPLICAS_AFTER_APPEND      = ( 20, True,  "Written to the log, but the in-sync replicas fell below min.insync.replicas.")
    INVALID_REQUIRED_ACKS                 = ( 21, False, "The produce request's acks is not one of -1, 0 or 1.")
    ILLEGAL_GENERATION                    = ( 22, False, "The group generation id is not the current one.")
    INCONSISTENT_GROUP_PROTOCOL           = ( 23, False, "The member's protocol type or protocols are empty or do not match the group's.")
    INVALID_GROUP_ID                      = ( 24, False, "The group id is not valid.")
    UNKNOWN_MEMBER_ID                     = ( 25, False, "The coordinator does not know this member id.")
    INVALID_SESSION_TIMEOUT               = ( 26, False, "The session timeout is outside group.min.session.timeout.ms .. group.max.session.timeout.ms.")
    REBALANCE_IN_PROGRESS                 = ( 27, False, "The group is rebalancing; the member must rejoin.")
    INVALID_COMMIT_OFFSET_SIZE            = ( 28, False, "The offset commit data has an invalid size.")
    TOPIC_AUTHORIZATION_FAILED            = ( 29, False, "Not authorized to access the topic.")
    GROUP_AUTHORIZATION_FAILED            = ( 30, False, "Not authorized to access the group.")
    CLUSTER_AUTHORIZATION_FAILED          = ( 31, False, "Not authorized to perform this cluster operation.")
    INVALID_TIMESTAMP                     = ( 32, False, "The message timestamp is outside the accepted range.")
    UNSUPPORTED_SASL_MECHANISM            = ( 33, False, "The broker does not support this SASL mechanism.")
    ILLEGAL_SASL_STATE                    = ( 34, False, "The request is not valid in the current SASL state.")
    UNSUPPORTED_VERSION                   = ( 35, False, "The broker does not support this version of the API.")
    TOPIC_ALREADY_EXISTS                  = ( 36, False, "A topic with this name already exists.")
    INVALID_PARTITIONS                    = ( 37, False, "The number of partitions is invalid (below 1).")
    INVALID_REPLICATION_FACTOR            = ( 38, False, "The replication factor is below 1 or above the number of live brokers.")
    INVALID_REPLICA_ASSIGNMENT            = ( 39, False, "The replica assignment is invalid.")
    INVALID_CONFIG                        = ( 40, False, "The configuration is invalid.")
    NOT_CONTROLLER                        = ( 41, True,  "This broker is not the active controller.")
    INVALID_REQUEST                       = ( 42, False, "The request is malformed or was sent to an incompatible broker; see the broker log.")
    UNSUPPORTED_FOR_MESSAGE_FORMAT        = ( 43, False, "The broker's message format version does not support this request.")
    POLICY_VIOLATION                      = ( 44, False, "The request parameters violate the configured policy.")
    OUT_OF_ORDER_SEQUENCE_NUMBER          = ( 45, False, "The broker received an out-of-order sequence number from the producer.")
    DUPLICATE_SEQUENCE_NUMBER             = ( 46, False, "The broker received a duplicate sequence number from the producer.")
    INVALID_PRODUCER_EPOCH                = ( 47, False, "The producer used an epoch older than the current one.")
    INVALID_TXN_STATE                     = ( 48, False, "The transactional operation is not valid in the producer's current state.")
    INVALID_PRODUCER_ID_MAPPING           = ( 49, False, "The producer id is not the one assigned to this transactional id.")
    INVALID_TRANSACTION_TIMEOUT           = ( 50, False, "The transaction timeout exceeds transaction.max.timeout.ms.")
    CONCURRENT_TRANSACTIONS               = ( 51, True,  "Another operation on the same transaction is still in progress.")
    TRANSACTION_COORDINATOR_FENCED        = ( 52, False, "The transaction coordinator that sent the markers is no longer the current one.")
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = ( 53, False, "Not authorized to use the transactional id.")
    SECURITY_DISABLED                     = ( 54, False, "Security features are disabled on this broker.")
    OPERATION_NOT_ATTEMPTED               = ( 55, False, "Not attempted because another operation in the same request failed.")
    KAFKA_STORAGE_ERROR                   = ( 56, True,  "A disk error occurred while accessing the log.")
    LOG_DIR_NOT_FOUND                     = ( 57, False, "The log directory is not one of the broker's log.dirs.")
    SASL_AUTHENTICATION_FAILED            = ( 58, False, "SASL authentication failed.")
    UNKNOWN_PRODUCER_ID                   = ( 59, False, "The broker has no state for this producer id (for example, retention removed its records).")
    REASSIGNMENT_IN_PROGRESS              = ( 60, False, "A partition reassignment is in progress.")
    DELEGATION_TOKEN_AUTH_DISABLED        = ( 61, False, "Delegation tokens are not enabled.")
    DELEGATION_TOKEN_NOT_FOUND            = ( 62, False, "The delegation token was not found.")
    DELEGATION_TOKEN_OWNER_MISMATCH       = ( 63, False, "The principal is not the token's owner or renewer.")
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED  = ( 64, False, "Delegation token requests are not allowed on this channel.")
    DELEGATION_TOKEN_AUTHORIZATION_FAILED = ( 65, False, "Not authorized for this delegation token operation.")
    DELEGATION_TOKEN_EXPIRED              = ( 66, False, "The delegation token has expired.")
    INVALID_PRINCIPAL_TYPE                = ( 67, False, "The principal type is not supported.")
    NON_EMPTY_GROUP                       = ( 68, False, "The group still has members.")
    GROUP_ID_NOT_FOUND                    = ( 69, False, "The group does not exist.")
    FETCH_SESSION_ID_NOT_FOUND            = ( 70, True,  "The fetch session id is unknown.")
    INVALID_FETCH_SESSION_EPOCH           = ( 71, True,  "The fetch session epoch is not the expected one.")
    LISTENER_NOT_FOUND                    = ( 72, True,  "The partition leader has no listener matching the one this metadata request arrived on.")
    TOPIC_DELETION_DISABLED               = ( 73, False, "Topic deletion is disabled.")
    FENCED_LEADER_EPOCH                   = ( 74, True,  "The leader epoch in the request is older than the broker's.")
    UNKNOWN_LEADER_EPOCH                  = ( 75, True,  "The leader epoch in the request is newer than the broker's.")
    UNSUPPORTED_COMPRESSION_TYPE          = ( 76, False, "The client does not support the partition's compression type.")
    STALE_BROKER_EPOCH                    = ( 77, False, "The broker epoch has changed.")
    OFFSET_NOT_AVAILABLE                  = ( 78, True,  "The new leader's high watermark has not caught up yet, so offsets cannot be served monotonically.")
    MEMBER_ID_REQUIRED                    = ( 79, False, "The member must rejoin with the member id the coordinator assigned.")
    PREFERRED_LEADER_NOT_AVAILABLE        = ( 80, True,  "The preferred leader is not available.")
    GROUP_MAX_SIZE_REACHED                = ( 81, False, "The group has reached its maximum size.")
    FENCED_INSTANCE_ID                    = ( 82, False, "Another member with the same group.instance.id joined with a different member id.")
    ELIGIBLE_LEADERS_NOT_AVAILABLE        = ( 83, True,  "No eligible leader is available for the partition.")
    ELECTION_NOT_NEEDED                   = ( 84, True,  "The partition does not need a leader election.")
    NO_REASSIGNMENT_IN_PROGRESS           = ( 85, False, "No partition reassignment is in progress.")
    GROUP_SUBSCRIBED_TO_TOPIC             = ( 86, False, "Cannot delete a topic's offsets while the group is subscribed to it.")
    INVALID_RECORD                        = ( 87, False, "A record failed the broker's validation and was rejected.")
    UNSTABLE_OFFSET_COMMIT                = ( 88, True,  "There are pending transactional offsets that must be resolved first.")
    THROTTLING_QUOTA_EXCEEDED             = ( 89, True,  "The throttling quota has been exceeded.")
    PRODUCER_FENCED                       = ( 90, False, "A newer producer with the same transactional id has fenced this one.")
    RESOURCE_NOT_FOUND                    = ( 91, False, "The request refers to a resource that does not exist.")
    DUPLICATE_RESOURCE                    = ( 92, False, "The request refers to the same resource twice.")
    UNACCEPTABLE_CREDENTIAL               = ( 93, False, "The requested credential does not meet the acceptance criteria.")
    INCONSISTENT_VOTER_SET                = ( 94, False, "The sender or receiver of a voter-only request is not an expected voter.")
    INVALID_UPDATE_VERSION                = ( 95, False, "The update version is invalid.")
    FEATURE_UPDATE_FAILED                 = ( 96, False, "Finalized features could not be updated because of an unexpected server error.")
    PRINCIPAL_DESERIALIZATION_FAILURE     = ( 97, False, "The forwarded request's principal could not be deserialized.")
    SNAPSHOT_NOT_FOUND                    = ( 98, False, "The requested snapshot was not found.")
    POSITION_OUT_OF_RANGE                 = ( 99, False, "The requested position is negative or beyond the end of the snapshot.")
    UNKNOWN_TOPIC_ID                      = (100, True,  "This server does not host a topic with this id.")
    DUPLICATE_BROKER_REGISTRATION         = (101, False, "This broker id is already registered.")
    BROKER_ID_NOT_REGISTERED              = (102, False, "This broker id is not registered.")
    INCONSISTENT_TOPIC_ID                 = (103, True,  "The topic id in the request does not match the log's topic id.")
    INCONSISTENT_CLUSTER_ID               = (104, False, "The cluster id in the request does not match the server's.")
    TRANSACTIONAL_ID_NOT_FOUND            = (105, False, "The transactional id was not found.")
    FETCH_SESSION_TOPIC_ID_ERROR          = (106, True,  "The fetch session used topic ids inconsistently.")
    INELIGIBLE_REPLICA                    = (107, False, "The proposed ISR contains a replica that is not eligible.")
    NEW_LEADER_ELECTED                    = (108, False, "The partition state was updated, but the leader has changed.")
    OFFSET_MOVED_TO_TIERED_STORAGE        = (109, False, "The requested offset has moved to tiered storage.")
    FENCED_MEMBER_EPOCH                   = (110, False, "The member epoch is fenced; the member must give up its partitions and rejoin.")
    UNRELEASED_INSTANCE_ID                = (111, False, "The instance id is still held by another member, which must leave first.")
    UNSUPPORTED_ASSIGNOR                  = (112, False, "The group does not support this assignor or its version range.")
    STALE_MEMBER_EPOCH                    = (113, False, "The member epoch is stale; retry once the heartbeat returns the current one.")
    MISMATCHED_ENDPOINT_TYPE              = (114, False, "The request was sent to the wrong type of endpoint.")
    UNSUPPORTED_ENDPOINT_TYPE             = (115, False, "This endpoint type is not supported yet.")
    UNKNOWN_CONTROLLER_ID                 = (116, False, "The controller id is unknown.")
    UNKNOWN_SUBSCRIPTION_ID               = (117, False, "The telemetry subscription id is unknown or outdated.")
    TELEMETRY_TOO_LARGE                   = (118, False, "The telemetry push is larger than the broker accepts.")
    INVALID_REGISTRATION                  = (119, False, "The controller considers the broker registration invalid.")
    TRANSACTION_ABORTABLE                 = (120, False, "The transaction hit an error; abort it to keep using the transactional id.")
    INVALID_RECORD_STATE                  = (121, False, "The record state is invalid; the delivery acknowledgement could not be completed.")
    SHARE_SESSION_NOT_FOUND               = (122, True,  "The share session was not found.")
    INVALID_SHARE_SESSION_EPOCH           = (123, True,  "The share session epoch is not valid.")
    FENCED_STATE_EPOCH                    = (124, False, "The share-group state epoch does not match the share coordinator's.")
    INVALID_VOTER_KEY                     = (125, False, "The voter key does not match the receiving replica's key.")
    DUPLICATE_VOTER                       = (126, False, "The voter is already in the voter set.")
    VOTER_NOT_FOUND                       = (127, False, "The voter is not in the voter set.")
    # Kafka 4.0 (KIP-848): ConsumerGroupHeartbeat v1's broker-side regex subscriptions
    INVALID_REGULAR_EXPRESSION            = (128, False, "The regular expression is not valid.")

    @classmethod
    def from_code(cls, code: int) -> ErrorCode:
        """The member for ``code``; a code this table does not know maps to UNKNOWN_SERVER_ERROR,
        as Kafka's clients do. Use ``ErrorCode(code)`` to get a ValueError instead."""
        member = cls._value2member_map_.get(code)
        return cast(ErrorCode, member) if member is not None else cls.UNKNOWN_SERVER_ERROR

    @classmethod
    def from_name(cls, name: str) -> ErrorCode:
        """The member for a wire name such as ``"NOT_LEADER_OR_FOLLOWER"`` (KeyError if unknown)."""
        return cls[name]

    @property
    def is_error(self) -> bool:
        return self is not ErrorCode.NONE


def is_retriable(code: int) -> bool:
    """Whether a client may retry after ``code`` (False for unknown codes)."""
    return ErrorCode.from_code(code).retriable


def default_message(code: int) -> str | None:
    """The default error message for ``code`` (None for NONE)."""
    return ErrorCode.from_code(code).message


MAX_MESSAGE = 1000      # characters of a KafkaError message; longer ones are cut


class KafkaError(Exception):
    """An error a handler turns into a response error code (and message, where the response
    version has one). ``args`` is ``(code, message)``, so instances pickle."""

    def __init__(self, code: ErrorCode | int, message: str | None = None) -> None:
        err = ErrorCode.from_code(int(code))
        if message is not None and len(message) > MAX_MESSAGE:
            # a message may quote what the client sent (a name of 32,767 bytes...): cut
            # it so the response stays encodable and the log readable
            message = message[:MAX_MESSAGE] + "..."
        super().__init__(err, message if message is not None else err.message)
        self.code: ErrorCode = err
        self.message: str | None = self.args[1]

    @property
    def retriable(self) -> bool:
        return self.code.retriable

    def __str__(self) -> str:
        text = f"{self.code.name} ({int(self.code)})"
        return f"{text}: {self.message}" if self.message else text


def raise_for_code(code: int, message: str | None = None) -> None:
    """Raise KafkaError unless ``code`` is NONE (0); for tools that read responses."""
    if code != ErrorCode.NONE:
        raise KafkaError(code, message)
