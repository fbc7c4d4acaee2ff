"""The Kafka wire protocol, sans-I/O: bytes in, objects out.

Imports nothing else of ours, and no sockets, asyncio or files (tests/unit/test_layering.py).
Every other package builds on it: ``storage`` (record batches), ``client`` (requests),
``broker`` (handlers), ``controller`` (its channel's requests), ``spark_jobs`` (decoding).

Map:

    primitives.py       int8..int64, varints, (compact) strings/bytes/arrays, uuid
    versions.py         version ranges ("0+", "3-7", "none")
    schema.py           declarative message schemas in Kafka's field vocabulary
    spec/               one module per API: request and response schemas, all versions
    codec.py            encode/decode entry points (compiled fast path, codec_compiled.py;
                        reference interpreter, codec_reference.py; a test keeps them equal)
    headers.py          request/response headers, whole-frame encode/decode (quirks named there)
    framing.py          size-prefixed frames with a max-size guard
    api_keys.py         ApiKey enum
    errors.py           the error-code table (code, name, retriable, message)
    records.py          record batches v2 (CRC32C, varint records, patching base offsets)
    legacy_records.py   message sets v0/v1, read and down-converted
    compression.py      gzip, snappy, lz4, zstd framed as Kafka frames them
    fetch_session.py    KIP-227 session ids and epochs (shared by broker and client)
    internal_topics.py  the record schemas of __consumer_offsets and __transaction_state
    topic_names.py      Kafka's topic name rules and the internal topics' names
    why_model.py        the DescribeWhy dataclasses: PartitionWhy, GroupWhy, BrokerStatus
                        (broker writes them, dump-log decodes them)
    record_validation.py, recompress.py  the leader's record checks (LogValidator) and
                        recompression to a topic's compression.type
    _record_walk.c      record_validation's per-record walk in C (optional: setup.py
                        builds it; the Python walk is the reference, a test keeps them equal)
    _gzip_members.c     compression's bounded gzip member reader in C, on zlib, without
                        the GIL (optional likewise; the Python reader is the reference)
    _frame_body.c       framing's large frame bodies received into their own bytes, in C
                        (optional likewise; chunks joined in Python are the reference)
    native.py           loading those C extensions where built; PYBROKER_NATIVE=0
    http_head.py        HTTP/1.1 request heads and responses for the metrics endpoint
                        and the web console (not Kafka's, but sans-I/O and shared)
    sasl_plain.py       SASL PLAIN (RFC 4616) tokens
    scram.py            SCRAM-SHA-256/512 (RFC 5802, 7677) messages and key derivation
    jaas.py             one sasl.jaas.config entry: login module, flag, options
    acl_types.py        the ACL vocabulary: resource, pattern, operation, permission codes
    spec/pybroker/      pybroker's own APIs (DescribeWhy, key 10000; never advertised)

Where things go: a new API is a new ``spec/<api>.py`` (request and response at every
version; the codec derives the rest); a new record-level format detail goes beside
``records.py``; nothing here may do I/O.
"""
