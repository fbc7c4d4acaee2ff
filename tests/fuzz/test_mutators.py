"""Unit tests of the fuzzer's parts (no broker): layouts agree with the codec,
frames are a pure function of (seed, index), the guard keeps protected names
and inter-broker APIs out, batch mutations keep a valid CRC, and the disk
check finds a bad batch."""

from __future__ import annotations

import random
import struct
from pathlib import Path

from protocol import codec, records
from protocol.codec import decode_from
from protocol.spec import all_apis
from tests.fuzz.decode_check import Expect, check_frame
from tests.fuzz.disk_check import check_log_dirs
from tests.fuzz.frame_corpus import CONTROLLER_ONLY, golden_seeds, schema_seeds
from tests.fuzz.mutators import FrameFactory, frame_guard
from tests.fuzz.record_mutators import make_batch


def test_layout_matches_the_codec_for_every_api_version_and_golden_frame() -> None:
    seeds = schema_seeds(random.Random(5), per_version=2) + golden_seeds()
    assert {s.api_key for s in seeds} == set(all_apis())
    assert any(s.origin.startswith("golden:") for s in seeds)
    for seed in seeds:
        spec = all_apis()[seed.api_key].request
        msg, end = decode_from(spec, seed.body, 0, seed.version)
        assert end == len(seed.body)
        assert codec.encode(msg, seed.version) == seed.body, seed.origin
        for slot in seed.slots:
            assert 0 <= slot.start <= slot.end <= len(seed.body)


def test_frames_are_a_function_of_seed_and_index() -> None:
    a, b = FrameFactory(7), FrameFactory(7)
    assert [a.frame(i).data for i in range(300)] == [b.frame(i).data for i in range(300)]
    assert a.frame(3).data != FrameFactory(8).frame(3).data or a.frame(4).data != \
        FrameFactory(8).frame(4).data


def test_every_mutation_kind_occurs_and_the_guard_holds() -> None:
    factory = FrameFactory(3)
    kinds = set()
    for i in range(3000):
        frame = factory.frame(i)
        kinds.add(frame.mutation)
        assert b"fuzz-steady" not in frame.data
        payload = frame.data[4:]          # after the (possibly lying) size prefix
        if len(payload) >= 2:
            assert struct.unpack(">h", payload[:2])[0] not in CONTROLLER_ONLY
    assert kinds >= {"clean", "int-edge", "length", "string", "null", "tagged", "records",
                     "header", "havoc", "prefix"}


def test_guard_refuses_protected_names_and_controller_apis() -> None:
    assert not frame_guard(b"\x00\x03\x00\x01....fuzz-steady-topic", 3)
    assert not frame_guard(struct.pack(">hhi", 6, 0, 1), 6)
    assert frame_guard(struct.pack(">hhi", 18, 0, 1), 18)


def test_mutated_batches_keep_a_valid_crc_unless_the_mutation_is_the_crc() -> None:
    rng = random.Random(11)
    checked = 0
    for _ in range(400):
        batch, label = make_batch(rng)
        if label in ("bad-crc", "truncated-batch") or len(batch) < records.HEADER_SIZE:
            continue
        header = records.read_header(batch, 0)
        if header.batch_length + records.LOG_OVERHEAD != len(batch):
            continue              # the batchLength field itself was the mutation
        assert records.crc_ok(batch, 0, header), label
        checked += 1
    assert checked > 200


def test_clean_frames_are_answered_and_broken_lengths_close() -> None:
    factory = FrameFactory(2)
    outcomes = {check_frame(factory.frame(i), random.Random(i))[0] for i in range(500)}
    assert {Expect.ANSWER, Expect.CLOSE} <= outcomes


def test_disk_check_finds_a_corrupted_batch(tmp_path: Path) -> None:
    part = tmp_path / "t-0"
    part.mkdir()
    good = records.build_batch([(b"k", b"v", 1000), (None, b"w", 1001)])
    bad = bytearray(records.build_batch([(b"k", b"v", 1000)], base_offset=2))
    bad[-1] ^= 0xFF                                  # inside the CRC'd range
    (part / "00000000000000000000.log").write_bytes(bytes(good) + bytes(bad))
    report = check_log_dirs([tmp_path])
    assert report.batches == 2 and report.records == 2
    assert report.problems and "CRC" in report.problems[0].problem
