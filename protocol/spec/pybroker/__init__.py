"""pybroker's own APIs: request/response schemas for keys outside Kafka's range.

Kafka's APIs (``protocol.spec``'s modules, ``all_apis()``) are the catalogue the
cross-checks compare with Kafka 3.9 and the one ApiVersions draws from. The
modules here are found by ``protocol.spec.pybroker_apis()``; the wire layer
(``wire_apis()``: headers, the broker's connection, ``api()``) knows both. Keys
start at ``protocol.api_keys.PYBROKER_API_KEY_BASE`` (10000), far above any key
Kafka assigns, and brokers never advertise them in ApiVersions: stock clients
never see them, and our client sends them knowing it talks to pybroker.

Map:

    describe_why.py   DescribeWhy (API key 10000): why a partition's ISR and HW
                      are what they are, why a group rebalanced, the broker's
                      ZooKeeper session (broker/why/, client/why_admin.py)
"""
