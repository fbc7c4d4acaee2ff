"""The structure-aware fuzzer (issue 17; ``make fuzz``).

Map:

    frame_layout.py     encode a request recording where each field's bytes are (slots)
    frame_corpus.py     seeds: every API/version built from the schemas, golden frames
                        of stock clients; name pools; what is never sent (protected
                        topic/group, inter-broker APIs)
    record_mutators.py  record batches built field by field, mutated, CRC fixed up;
                        compression garbage and bombs
    mutators.py         FrameFactory(seed).frame(i): deterministic mutated frames
                        (fields, lengths, strings, nulls, tagged fields, records,
                        header, havoc, size prefix); frame_guard
    decode_check.py     in-process: FrameBuffer, header, body, records decoders may
                        raise only their documented errors; expected wire outcome
    wire.py             many pipelined connections to a real broker, reconnects
    steady_clients.py   the well-behaved confluent-kafka producer/consumer (subprocess)
    disk_check.py       every segment on disk: CRC, magic 2, records parse
    fuzz_run.py         the campaign CLI: python -m tests.fuzz.fuzz_run --frames N --seed S

The broker side of the stall measurement is broker/loop_lag.py (one INFO line
per minute and one at shutdown: "event loop lag since start ...").
Short run in ``make test``: test_fuzz_short.py.
"""
