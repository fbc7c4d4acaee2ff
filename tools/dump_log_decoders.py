"""How ``pybroker dump-log --print-data-log`` turns a record's key and value into text,
as Kafka 3.9's DumpLogSegments message parsers do (pure: bytes in, text out).

A parser maps a Record to ``(key text or None, payload text or None)``; None means the
part is not printed. Three kinds, chosen by the flags (the first that applies):

``--offsets-decoder`` (records of ``__consumer_offsets``; Kafka's OffsetsMessageParser
since 3.8): the key is JSON ``{"type":"<key version>","data":{...}}`` and the value
``{"version":"<value version>","data":{...}}``, each ``data`` in Kafka's JSON-converter
form (lower-camel field names in schema order, the fields of that version only, bytes
as base64). Key versions 0 and 1 are offset commits, 2 group metadata; another version
gives the key ``Unknown record type N at offset O, skipping.`` and no payload. A null
value (tombstone) prints ``<DELETE>``. For a group whose protocolType is ``consumer``
each member's ``subscription`` and ``assignment`` bytes are replaced by their decoded
ConsumerProtocol JSON (kept as base64 when they do not decode). Layouts::

    OffsetCommitKey v0-1     group: string, topic: string, partition: int32
    OffsetCommitValue v0-4   offset: int64, leaderEpoch: int32 (v3+), metadata: string,
                             commitTimestamp: int64, expireTimestamp: int64 (v1 only)
    GroupMetadataKey v2      group: string
    GroupMetadataValue v0-4  protocolType, generation, protocol?, leader?,
                             currentStateTimestamp (v2+), members: [memberId,
                             groupInstanceId? (v3+), clientId, clientHost,
                             rebalanceTimeout (v1+), sessionTimeout, subscription,
                             assignment]
    ConsumerProtocolSubscription v0-3  topics: [string], userData: bytes?,
                             ownedPartitions (v1+): [topic, partitions: [int32]],
                             generationId (v2+), rackId? (v3+)
    ConsumerProtocolAssignment v0-3    assignedPartitions: [topic, partitions], userData?
    ConsumerGroup*Key/Value  key versions 3-8 and 16: the KIP-848 consumer groups'
                             records (protocol/internal_topics.CONSUMER_GROUP_RECORDS),
                             printed like the others: {"type":"5","data":{...}}

(strings int16-length prefixed, ``?`` nullable, arrays int32-counted; v4 values are
flexible. Each record starts with its int16 version: protocol.codec.decode_prefixed.)

``--transaction-log-decoder`` (records of ``__transaction_state``; Kafka 3.9's
TransactionLog.formatRecordKeyAndValue): key ``transaction_metadata::transactionalId=ID``,
value ``producerId:P,producerEpoch:E,state=S,partitions=[t-0,t-1],
txnLastUpdateTimestamp=T,txnTimeoutMs=M`` or ``<DELETE>`` for a tombstone.

Otherwise ``--key-decoder-class`` / ``--value-decoder-class`` (default Kafka's
StringDecoder: UTF-8, bad bytes as U+FFFD; IntegerDecoder and LongDecoder read a
big-endian int32 / int64). Other classes cannot be loaded here: a clear error.

The schemas are protocol/internal_topics.py's, the ones the broker writes with.
"""

from __future__ import annotations

import base64
import uuid
import json
import struct
from collections.abc import Callable
from typing import Any

from protocol.codec import decode_from, decode_prefixed, record_version
from protocol.primitives import DecodeError, uuid_text
from protocol.records import Record
from protocol.internal_topics import (CONSUMER_ASSIGNMENT, CONSUMER_GROUP_RECORDS,
                                      CONSUMER_SUBSCRIPTION,
                                      GROUP_METADATA_KEY, GROUP_METADATA_VALUE,
                                      OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE,
                                      TRANSACTION_LOG_KEY, TRANSACTION_LOG_VALUE)
from protocol.schema import FieldSpec, MessageSpec, Struct, json_name

Parser = Callable[[Record], tuple[str | None, str | None]]

# -- __consumer_offsets ----------------------------------------------------------------

OFFSET_KEY_VERSIONS = (0, 1)
GROUP_KEY_VERSION = 2
CONSUMER_PROTOCOL_TYPE = "consumer"


def to_json(struct_: Struct, version: int) -> dict[str, Any]:
    """Kafka's generated JsonConverter.write: the fields of ``version`` in schema order,
    lower-camel names; a tagged field only when it differs from its default."""
    out: dict[str, Any] = {}
    for f in struct_.SPEC.fields:
        if version not in f.versions:
            continue
        value = getattr(struct_, f.attr)
        if version in f.tagged and value == f.default_value():
            continue
        out[json_name(f.name)] = _json_value(f, value, version)
    return out


def _json_value(f: FieldSpec, value: Any, version: int) -> Any:
    if value is None:
        return None
    if isinstance(value, Struct):
        return to_json(value, version)
    if isinstance(value, list):
        return [_json_value(f, v, version) for v in value]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")   # Jackson's BinaryNode
    if isinstance(value, uuid.UUID):
        return uuid_text(value)                                  # Kafka's Uuid.toString
    return value


def compact_json(obj: Any) -> str:
    """Jackson's ObjectNode.toString: no spaces, non-ASCII kept as is."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def _embedded(spec: MessageSpec, data: bytes) -> dict[str, Any] | None:
    """A ConsumerProtocol struct (int16 version + body, trailing bytes allowed: newer
    versions append fields) as JSON, or None when it does not decode."""
    try:
        version = record_version(data)
        decoded, _ = decode_from(spec, memoryview(data), 2, version)
    except DecodeError:
        return None
    return to_json(decoded, version)


def _group_value_json(value: Struct, version: int) -> dict[str, Any]:
    data = to_json(value, version)
    if data.get("protocolType") == CONSUMER_PROTOCOL_TYPE:
        for member_json, member in zip(data.get("members", []), value.members):
            for name, spec, raw in (("subscription", CONSUMER_SUBSCRIPTION, member.subscription),
                                    ("assignment", CONSUMER_ASSIGNMENT, member.assignment)):
                decoded = _embedded(spec, bytes(raw))
                if decoded is not None:
                    member_json[name] = decoded
    return data


def offsets_parser(record: Record) -> tuple[str | None, str | None]:
    """Kafka 3.9's OffsetsMessageParser.parse (see the module docstring)."""
    if record.key is None:
        return (f"Error at offset {record.offset}, skipping. Failed to decode message "
                "using offset topic decoder (message had a missing key)"), None
    try:
        key_version = record_version(record.key)
        if key_version in OFFSET_KEY_VERSIONS:
            key_spec, value_spec = OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE
        elif key_version == GROUP_KEY_VERSION:
            key_spec, value_spec = GROUP_METADATA_KEY, GROUP_METADATA_VALUE
        elif key_version in CONSUMER_GROUP_RECORDS:       # KIP-848 consumer groups
            key_spec, value_spec = CONSUMER_GROUP_RECORDS[key_version]
        else:
            return f"Unknown record type {key_version} at offset {record.offset}, skipping.", None
        _, key = decode_prefixed(key_spec, record.key)
        key_text = compact_json({"type": str(key_version), "data": to_json(key, key_version)})
        if record.value is None:
            return key_text, "<DELETE>"
        value_version, value = decode_prefixed(value_spec, record.value)
        data = (_group_value_json(value, value_version) if value_spec is GROUP_METADATA_VALUE
                else to_json(value, value_version))
        return key_text, compact_json({"version": str(value_version), "data": data})
    except DecodeError as e:
        return f"Error at offset {record.offset}, skipping. {e}", None


# -- __transaction_state ---------------------------------------------------------------

TXN_STATES = ("Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit",
              "CompleteAbort", "Dead", "PrepareEpochFence")


def transaction_log_parser(record: Record) -> tuple[str | None, str | None]:
    """Kafka 3.9's TransactionLog.formatRecordKeyAndValue (see the module docstring)."""
    try:
        if record.key is None:
            raise DecodeError("the record has no key")
        _, key = decode_prefixed(TRANSACTION_LOG_KEY, record.key)
        key_text = f"transaction_metadata::transactionalId={key.transactional_id}"
        if record.value is None:
            return key_text, "<DELETE>"
        _, v = decode_prefixed(TRANSACTION_LOG_VALUE, record.value)
        if not 0 <= v.transaction_status < len(TXN_STATES):
            raise DecodeError(f"unknown transaction state byte {v.transaction_status}")
        partitions = sorted((p.topic, int(i)) for p in v.transaction_partitions or ()
                            for i in p.partition_ids)
        return key_text, (
            f"producerId:{v.producer_id},producerEpoch:{v.producer_epoch},"
            f"state={TXN_STATES[v.transaction_status]},"
            f"partitions=[{','.join(f'{t}-{p}' for t, p in partitions)}],"
            f"txnLastUpdateTimestamp={v.transaction_last_update_timestamp_ms},"
            f"txnTimeoutMs={v.transaction_timeout_ms}")
    except DecodeError as e:
        return f"Error at offset {record.offset}, skipping. {e}", None


# -- --key-decoder-class / --value-decoder-class ------------------------------------------

Decoder = Callable[[bytes], str]


def _string(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _fixed(fmt: str) -> Decoder:
    layout = struct.Struct(fmt)

    def decode(data: bytes) -> str:
        if len(data) < layout.size:
            return f"<{len(data)} bytes: too short for {layout.size}>"
        return str(layout.unpack_from(data)[0])
    return decode


DECODERS: dict[str, Decoder] = {
    "org.apache.kafka.tools.api.StringDecoder": _string,
    "org.apache.kafka.tools.api.IntegerDecoder": _fixed(">i"),
    "org.apache.kafka.tools.api.LongDecoder": _fixed(">q"),
}
DEFAULT_DECODER = "org.apache.kafka.tools.api.StringDecoder"
# the pre-3.8 names Kafka still takes, with a deprecation line on stdout
DEPRECATED_DECODERS = {f"kafka.serializer.{n}": f"org.apache.kafka.tools.api.{n}"
                       for n in ("StringDecoder", "IntegerDecoder", "LongDecoder")}


def decoder_named(class_name: str | None) -> tuple[Decoder, str | None]:
    """-> (decoder, deprecation notice or None); ValueError naming an unknown class."""
    name = class_name or DEFAULT_DECODER
    notice = None
    if name in DEPRECATED_DECODERS:
        notice = f"{name} is deprecated. Please use {DEPRECATED_DECODERS[name]} instead"
        name = DEPRECATED_DECODERS[name]
    if name not in DECODERS:
        raise ValueError(f"decoder class {class_name!r} is not available here; use one of "
                         f"{', '.join(sorted(DECODERS))}")
    return DECODERS[name], notice


def decoder_parser(key_decoder: Decoder, value_decoder: Decoder) -> Parser:
    """Kafka's DecoderMessageParser: each present part through its decoder."""
    def parse(record: Record) -> tuple[str | None, str | None]:
        key = None if record.key is None else key_decoder(record.key)
        value = None if record.value is None else value_decoder(record.value)
        return key, value
    return parse


__all__ = ["DECODERS", "Parser", "compact_json", "decoder_named", "decoder_parser",
           "offsets_parser", "to_json", "transaction_log_parser"]
