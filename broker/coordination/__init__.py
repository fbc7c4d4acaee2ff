"""The broker's side of the coordinators (``coordinator/``): it builds them over this
broker's replica manager, logs, metadata cache, producer-id blocks and connection
pools, and gives them the seams they write and send through. The coordinators
themselves know nothing of the broker (``tests/unit/test_layering.py``).

Map:

    host.py            GroupHost, TransactionHost: what of the Broker these adapters use
    groups.py          the group coordinator: ``build``, ``coordinator_of`` (what the
                       group handlers call), the __consumer_offsets partition count
    group_settings.py  the group.consumer.* / group.coordinator.* broker configs ->
                       the consumer-group state machine's GroupConfig (ConfigError)
    transactions.py    the transaction coordinator: ``build``, its MarkerChannel over
                       the marker pool, the KIP-890 ``verifier`` of the partition leader
    offsets_log.py     BrokerOffsetsLog: the coordinators' OffsetsLog seam over the
                       replica manager (appends) and the partition's local log (loads)
    local_markers.py   write_markers: one producer's markers on the partitions this
                       broker leads (the WriteTxnMarkers handler, and the coordinator's
                       own partitions in process)
"""
