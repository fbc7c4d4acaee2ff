"""Dynamic broker configs (issue 18): BROKER resources per broker id and cluster-wide,
stored in ZooKeeper as Kafka stores them, applied without a restart; and
BROKER_LOGGER, log levels at run time.

    kafka_keys.py Kafka 3.9's dynamic broker keys as data: sets, types, defaults, checks
    effects.py   which of them pybroker applies, which it accepts without effect (why)
    keys.py      which keys are dynamic, at which level; value checks (INVALID_CONFIG)
    layers.py    per-broker > cluster default > static > default: the effective config
    live.py      applying it to a running broker; start-up load; /config/changes watch
    listeners.py the listener keys: checks; listeners opened/closed, registration rewritten
    limits.py    listener.name.<l>.max.connections onto the open listeners' quotas
    describe.py  DescribeConfigs BROKER rows: sources and synonyms in Kafka's order
    alter.py     the alter flow: check, (ValidateOnly stops), store, apply
    rates.py     the replication throttle rates onto the broker's quotas
    loggers.py   BROKER_LOGGER: describe and set Python loggers' levels
    host.py      DynamicConfigHost: what of the Broker all of the above use, typed

Storage (shared with the TLS keystores and the throttle rates, broker/security/
reconfigure.py): ``/config/brokers/<id>`` and ``/config/brokers/<default>`` =
``{"version":1,"config":{key: value}}``, each write followed by a
``/config/changes/config_change_<seq>`` notification ``{"version":2,
"entity_path":"brokers/<id>"}``; every broker watches those and re-reads its own
entry and the default one. broker/dynamic_broker_configs.py is the entry point the
broker and the handlers call.
"""
