"""protocol/recompress.py: batches rewritten to the topic's codec keep every record,
the producer fields and the offsets; the CRC is valid; same-codec data is untouched."""

from __future__ import annotations

import pytest

from protocol import compression, records
from protocol.recompress import needs_recompression, recompress, target_codec
from protocol.records import build_batch

RECS = [(b"k%d" % i, b"value %d " % i * 30, 1_700_000_000_000 + i) for i in range(40)]


def _batches(*codecs: int) -> bytes:
    return b"".join(bytes(build_batch(RECS, codec=c, producer_id=7, producer_epoch=2,
                                      base_sequence=10 * n))
                    for n, c in enumerate(codecs))


def test_target_codec() -> None:
    assert target_codec("producer") is None and target_codec(None) is None
    assert [target_codec(t) for t in ("uncompressed", "gzip", "snappy", "lz4", "zstd")] == \
        [0, 1, 2, 3, 4]


@pytest.mark.parametrize("source,target", [(0, 4), (3, 4), (1, 0), (4, 3), (2, 1)])
def test_recompress_keeps_records_and_producer_fields(source: int, target: int) -> None:
    for codec in (source, target):
        if not compression.available(codec):
            pytest.skip(f"codec {codec} not installed")
    data = _batches(source, source)
    assert needs_recompression(data, target)
    out = recompress(data, target)
    headers = records.validate(out)          # CRCs and lengths are right
    assert [h.compression for h in headers] == [target, target]
    before = records.validate(data)
    for old, new in zip(before, headers):
        assert (new.base_offset, new.last_offset_delta, new.producer_id, new.producer_epoch,
                new.base_sequence, new.records_count, new.base_timestamp,
                new.max_timestamp) == \
            (old.base_offset, old.last_offset_delta, old.producer_id, old.producer_epoch,
             old.base_sequence, old.records_count, old.base_timestamp, old.max_timestamp)
    got = [(r.key, r.value, r.timestamp) for pos, _h in records.iter_batches(out)
           for r in records.iter_records(out, pos)]
    assert got == RECS + RECS
    assert not needs_recompression(out, target)


def test_only_batches_in_another_codec_are_rewritten() -> None:
    data = _batches(0, 4)
    out = recompress(data, 4)
    assert [h.compression for h in records.validate(out)] == [4, 4]
    second = len(build_batch(RECS, codec=0, producer_id=7, producer_epoch=2, base_sequence=0))
    assert out.endswith(data[second:])      # the zstd batch is kept byte for byte
    same = _batches(4)
    assert recompress(same, 4) == same and not needs_recompression(same, 4)
    assert not needs_recompression(data, None)
