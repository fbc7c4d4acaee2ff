"""Which of Kafka 3.9's dynamic broker keys (kafka_keys.py) pybroker applies, and which
it accepts without effect.

APPLIED (``APPLIED``; live.py, listeners.py, rates.py, broker/security/reconfigure.py):

* the log defaults (DynamicLogConfig: log.retention.ms, log.segment.bytes, ...,
  message.max.bytes, min.insync.replicas, unclean.leader.election.enable): every
  topic without its own override takes the new default at once;
* the log cleaner's log.cleaner.dedupe.buffer.size, log.cleaner.io.buffer.load.factor
  and log.cleaner.backoff.ms; the connection limits (max.connections,
  max.connections.per.ip, max.connections.per.ip.overrides,
  max.connection.creation.rate); producer.id.expiration.ms;
  transaction.partition.verification.enable (read when the broker starts: a change
  holds from the next start);
* the replication throttle rates (per broker);
* the listener keys (listeners, advertised.listeners, listener.security.protocol.map;
  per broker): listeners opened and closed live;
* per listener: a TLS listener's ``listener.name.<l>.ssl.{keystore,truststore}.
  {type,location}`` (certificate rotation) and ``listener.name.<l>.max.connections``.

WITHOUT EFFECT (``WITHOUT_EFFECT``, and every other listener-prefixed key): accepted,
checked as Kafka types them, stored in ZooKeeper and described with their sources;
nothing reads them, not at the next start either (so a BrokerConfig field among them,
e.g. sasl.enabled.mechanisms, keeps its server.properties value): ``REASONS`` says
why, per key. The password keys among them (sasl.jaas.config, the listener-prefixed
TLS passwords and PEM) are refused when stored, as Kafka's ZooKeeper mode refuses
them without password.encoder.secret (keys.check_passwords).
"""

from __future__ import annotations

from broker.dynamic_config import kafka_keys as kafka
from broker.replication.throttle import FOLLOWER_RATE, LEADER_RATE

# BrokerConfig fields applied live besides the log defaults and the listener keys
APPLIED_FIELDS = frozenset({
    "log.cleaner.dedupe.buffer.size", "log.cleaner.io.buffer.load.factor",
    "log.cleaner.backoff.ms", "max.connections", "max.connections.per.ip",
    "max.connections.per.ip.overrides", "max.connection.creation.rate",
    "producer.id.expiration.ms", "transaction.partition.verification.enable",
})
THROTTLE_RATES = frozenset({LEADER_RATE, FOLLOWER_RATE})

# keys (not listener-prefixed) pybroker applies
APPLIED = kafka.DYNAMIC_LOG | APPLIED_FIELDS | THROTTLE_RATES | kafka.LISTENER_DEFINITION
# keys (not listener-prefixed) accepted without effect; the DynamicSecurityConfigs are
# dynamic only with a listener prefix
WITHOUT_EFFECT = kafka.BROKER_DYNAMIC - APPLIED - kafka.DYNAMIC_SECURITY
# per listener: applied on a TLS listener of this broker (reconfigure.RECONFIGURABLE)
# and on any listener (its own connection limit); every other prefixed key has no effect
APPLIED_PER_LISTENER = frozenset({"ssl.keystore.type", "ssl.keystore.location",
                                  "ssl.truststore.type", "ssl.truststore.location",
                                  "max.connections"})

_THREADS = "pybroker serves every connection and request on one asyncio event loop, " \
           "with worker threads on demand"
_TLS = "a running listener's TLS settings come from server.properties; only its " \
       "keystore and truststore are reloaded (listener.name.<l>.ssl.keystore.location, ...)"
_SASL = "a listener's SASL mechanisms and JAAS settings come from server.properties"
_KERBEROS = "pybroker has no Kerberos (GSSAPI) login"
_LOGIN_REFRESH = "pybroker's broker-side SASL mechanisms have no login to refresh"
_JAVA = "a Java class: pybroker loads no plugins"

# why each WITHOUT_EFFECT key has no effect (DescribeConfigs documentation, README)
REASONS: dict[str, str] = {
    "num.io.threads": _THREADS, "num.network.threads": _THREADS,
    "num.replica.fetchers": _THREADS, "num.recovery.threads.per.data.dir": _THREADS,
    "background.threads": _THREADS, "log.cleaner.threads": "one cleaner task",
    "log.cleaner.io.max.bytes.per.second": "the log cleaner is not throttled",
    "log.cleaner.io.buffer.size": "the log cleaner does not size its I/O buffers by it",
    "metric.reporters": _JAVA + " (metrics: prometheus.listener)",
    "replica.alter.log.dirs.io.max.bytes.per.second": "log dir moves are not throttled",
    "principal.builder.class": _JAVA, "ssl.engine.factory.class": _JAVA,
    "ssl.protocol": _TLS, "ssl.provider": _TLS, "ssl.cipher.suites": _TLS,
    "ssl.enabled.protocols": _TLS, "ssl.keymanager.algorithm": _TLS,
    "ssl.trustmanager.algorithm": _TLS, "ssl.endpoint.identification.algorithm": _TLS,
    "ssl.secure.random.implementation": _TLS, "ssl.client.auth": _TLS,
    "sasl.mechanism.inter.broker.protocol": _SASL, "sasl.jaas.config": _SASL,
    "sasl.enabled.mechanisms": _SASL,
    "sasl.kerberos.service.name": _KERBEROS, "sasl.kerberos.kinit.cmd": _KERBEROS,
    "sasl.kerberos.ticket.renew.window.factor": _KERBEROS,
    "sasl.kerberos.ticket.renew.jitter": _KERBEROS,
    "sasl.kerberos.min.time.before.relogin": _KERBEROS,
    "sasl.kerberos.principal.to.local.rules": _KERBEROS,
    "sasl.login.refresh.window.factor": _LOGIN_REFRESH,
    "sasl.login.refresh.window.jitter": _LOGIN_REFRESH,
    "sasl.login.refresh.min.period.seconds": _LOGIN_REFRESH,
    "sasl.login.refresh.buffer.seconds": _LOGIN_REFRESH,
    **{k: "pybroker has no tiered storage (remote log manager)" for k in kafka.REMOTE_LOG},
}


def doc(key: str) -> str:
    """DescribeConfigs documentation of a key accepted without effect."""
    return f"Accepted and stored without effect: {REASONS[key]}." if key in REASONS else ""
