"""In-process decoding of a fuzz frame, and what the broker should do with it.

``check_frame(frame, rng)`` runs a frame through the broker's own decoding
path, sans-I/O: ``framing.FrameBuffer`` (fed in random chunk sizes),
``protocol.headers.decode_request_header``, ``protocol.codec.decode_from``,
and for Produce every partition's records through ``protocol.records.validate``
and, batch by batch, ``iter_records``. The invariant: nothing in there raises
anything but the documented errors (``ALLOWED``: DecodeError, the records
module's RecordError, the framing errors, the codec errors of
protocol.compression that iter_records lets through). Anything else is a ``Violation``.

It also returns the expected outcome on the wire (``Expect``), which the
sender uses to schedule frames: ``ANSWER`` (decodes; the broker answers),
``SILENT`` (a decodable acks=0 Produce: no response), ``CLOSE`` (the broker
closes the connection: undecodable header or body, unsupported key/version,
bad size prefix), ``STALL`` (a size prefix announcing more bytes than sent:
the broker waits for them).
"""

from __future__ import annotations

import random
import traceback
from dataclasses import dataclass
from enum import Enum
from typing import Any

from broker.dispatch import load_handlers, supported
from protocol import compression, records
from protocol.codec import decode_from
from protocol.framing import FrameBuffer, FrameTooLarge, InvalidFrameSize
from protocol.headers import API_VERSIONS, decode_request_header
from protocol.primitives import DecodeError
from protocol.record_validation import max_inflated_bytes
from protocol.spec import all_apis
from tests.fuzz.mutators import FuzzFrame

MAX_FRAME = 100 * 1024 * 1024        # socket.request.max.bytes default
INFLATE_BOUND = max_inflated_bytes(1048588)   # the produce path's bound at the default
# The documented errors. iter_records decompresses through protocol.compression, whose
# docstring promises CorruptCompressedData (DecompressedTooLarge beyond a bound) and
# UnknownCodec: they pass through unwrapped, so they count as the records path's errors.
ALLOWED: tuple[type[BaseException], ...] = (
    DecodeError, records.RecordError, FrameTooLarge, InvalidFrameSize,
    compression.CorruptCompressedData, compression.UnknownCodec)


class Expect(Enum):
    ANSWER = "answer"
    SILENT = "silent"
    CLOSE = "close"
    STALL = "stall"


@dataclass(frozen=True)
class Violation:
    index: int
    stage: str
    error: str
    trace: str


_loaded = False


def _ensure_handlers() -> None:
    global _loaded
    if not _loaded:
        load_handlers()
        _loaded = True


def _guarded(index: int, stage: str, fn: Any, violations: list[Violation]) -> tuple[bool, Any]:
    """-> (ok, result); an allowed error -> (False, None); any other -> a Violation."""
    try:
        return True, fn()
    except ALLOWED:
        return False, None
    except Exception as e:  # noqa: BLE001 - the point: anything else is a finding
        violations.append(Violation(index, stage, f"{type(e).__module__}.{type(e).__name__}: {e}"[:300],
                                    traceback.format_exc(limit=6)))
        return False, None


def check_frame(frame: FuzzFrame, rng: random.Random, *, records_deep: bool = True
                ) -> tuple[Expect, list[Violation]]:
    _ensure_handlers()
    violations: list[Violation] = []
    fb = FrameBuffer(MAX_FRAME)
    data = frame.data
    payloads: list[bytes] = []

    def feed() -> None:
        at = 0
        while at < len(data):
            step = rng.choice((1, 3, 64, 4096, len(data)))
            payloads.extend(fb.feed(data[at:at + step]))
            at += step
    ok, _ = _guarded(frame.index, "framing", feed, violations)
    if not ok:
        return Expect.CLOSE, violations
    if not payloads:
        return Expect.STALL, violations
    expect = Expect.ANSWER
    for payload in payloads:
        outcome = _check_payload(frame.index, payload, violations, records_deep)
        if outcome is Expect.CLOSE:
            return Expect.CLOSE, violations
        if outcome is Expect.SILENT and expect is Expect.ANSWER and len(payloads) == 1:
            expect = Expect.SILENT
    if fb.buffered:
        return Expect.STALL, violations
    return expect, violations


def _check_payload(index: int, payload: bytes, violations: list[Violation],
                   records_deep: bool) -> Expect:
    ok, got = _guarded(index, "header", lambda: decode_request_header(payload), violations)
    if not ok:
        return Expect.CLOSE
    header, pos = got
    if not supported(header.api_key, header.api_version):
        return Expect.ANSWER if header.api_key == API_VERSIONS else Expect.CLOSE
    spec = all_apis()[header.api_key].request
    ok, got = _guarded(index, "body", lambda: decode_from(spec, payload, pos, header.api_version),
                       violations)
    if not ok:
        return Expect.CLOSE
    body, _end = got
    if header.api_key != 0:
        return Expect.ANSWER
    if records_deep:
        for topic in body.topic_data or []:
            for part in topic.partition_data or []:
                if part.records is not None:
                    _check_records(index, part.records, violations)
    return Expect.SILENT if body.acks == 0 else Expect.ANSWER


def _check_records(index: int, data: Any, violations: list[Violation]) -> None:
    _guarded(index, "records.validate", lambda: records.validate(data), violations)
    for at, header in records.iter_batches(data):
        if header.compression and header.magic == records.MAGIC:
            # iter_records inflates without a bound (it serves data already on disk,
            # bounded when produced): check the bounded path first and walk the
            # records only when the batch inflates within the broker's bound
            ok, _ = _guarded(index, "records.batch_body",
                             lambda: records.batch_body(data, at, header, max_size=INFLATE_BOUND),
                             violations)
            if not ok:
                continue
        _guarded(index, "records.iter_records", lambda: list(records.iter_records(data, at)),
                 violations)
