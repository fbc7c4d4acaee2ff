"""The alter flow for BROKER resources (Incremental/AlterConfigs), after the handler
turned the request into ``updates`` (key -> value, None deletes):

1. check every key (dynamic here? per-broker-only at the default?) and every value
   (keys.check): INVALID_REQUEST / INVALID_CONFIG, nothing changed;
2. a TLS listener's keystore/truststore key (keys.tls_updates): the new SSL context
   is built now (reconfigure.apply with ValidateOnly), so a keystore OpenSSL refuses
   is INVALID_CONFIG before anything is stored; the other listener keys are stored
   without effect;
3. ValidateOnly stops here; then a password key is refused (keys.check_passwords:
   INVALID_CONFIG, as Kafka's ZooKeeper mode without password.encoder.secret);
4. the entry is written to ZooKeeper with a change notification (reconfigure.store);
5. this broker applies it at once (TLS keys as given, so the same keystore path again
   reloads the files; then live.refresh); the others on the notification
   (live.adopt_entry, which applies the TLS keys whose value changed);
6. the listener keys (listeners, advertised.listeners, listener.security.protocol.map;
   per broker, checked in step 1 by listeners.check): listeners.sync opens the added
   listeners, closes the removed ones and rewrites /brokers/ids/<id>.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.dynamic_config import keys, listeners, live
from broker.security import reconfigure

if TYPE_CHECKING:
    from broker.dynamic_config.host import DynamicConfigHost


async def alter(broker: DynamicConfigHost, default: bool, updates: dict[str, str | None],
                validate_only: bool) -> None:
    """Raises reconfigure.ReconfigureError (see the module docstring)."""
    keys.check(updates, per_broker=not default, broker=broker)
    tls = {} if default else keys.tls_updates(broker, updates)
    if tls:
        reconfigure.apply(broker, tls, validate_only=True)
    if validate_only:
        return
    keys.check_passwords(updates)
    if default:
        entry = await reconfigure.store(broker, updates, keys.DEFAULT_ENTITY)
        live.adopt_entry(broker, entry, default=True)
        return
    entry = await reconfigure.store(broker, updates)
    if tls:     # applied as given: the same path again reloads the files (rotation)
        reconfigure.apply(broker, tls, validate_only=False)
    broker.dynamic_configs = live.normalise(entry)
    live.refresh(broker)
    await listeners.sync(broker)        # listeners opened/closed, registration rewritten
