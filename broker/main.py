"""Process entry for ``pybroker start``: config, logging, event loop, signals.

uvloop is chosen here, where the loop is made, and nowhere else. SIGTERM and
SIGINT trigger one clean shutdown (controlled shutdown, flush, checkpoints,
clean-shutdown marker); a second signal during shutdown exits at once. A
signal while start-up still waits to register in ZooKeeper (for another
session's registration of our id to expire) ends the wait and shuts down
what did start; so does finding the broker id held by another live broker,
which exits with 1. So does a broker with no usable log dir (at start-up, or
when the last one fails: Broker.halt, broker/log_dirs/).

Every connection is a file descriptor, so start-up raises the soft open-file
limit (RLIMIT_NOFILE) to the hard one and logs both; it warns when
``max.connections`` is above what the limit allows.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import resource
import signal
import sys
from typing import Any, Callable

from broker.config import BrokerConfig, ConfigError

log = logging.getLogger("pybroker")

LOG_FORMAT = "[%(asctime)s] %(levelname)s %(message)s (%(name)s)"


def _loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency; stay runnable without it
        return None
    return uvloop.new_event_loop


# How long a thread may hold the GIL while another waits for it (Python's default is
# 5 ms). The event loop gives the GIL up at every socket and file call; a pool thread
# running Python (the pure-Python record checks, a gzip stream of many members) takes
# it each time, and the loop then waits out a whole interval to get it back -- the GIL
# "convoy": a dozen syscalls cost the loop 60 ms. make fuzz's stall attribution
# (broker/loop_lag.py) put 6 of its 13 stalls over 50 ms there with the default, 3 of
# 4 with 1 ms (one run each; the gzip reader behind most of them is C since).
GIL_SWITCH_INTERVAL_S = 0.001


def run_broker(config_path: str, overrides: list[str]) -> int:
    try:
        config = BrokerConfig.load(config_path, overrides)
    except (ConfigError, OSError) as e:
        print(f"pybroker: {e}", file=sys.stderr)
        return 1
    level = {"WARN": "WARNING", "TRACE": "DEBUG"}.get(config.log_level, config.log_level)
    logging.basicConfig(level=level, format=LOG_FORMAT, stream=sys.stderr)
    raise_open_file_limit(config.max_connections)
    sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)
    with asyncio.Runner(loop_factory=_loop_factory()) as runner:
        try:
            return runner.run(_serve(config))
        except ConfigError as e:
            log.error("%s", e)
            return 1


def raise_open_file_limit(max_connections: int) -> int:
    """Raise the soft RLIMIT_NOFILE to the hard limit (the kernel's nr_open when
    that is unlimited); returns the soft limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard
    if hard == resource.RLIM_INFINITY:
        try:
            with open("/proc/sys/fs/nr_open", encoding="ascii") as f:
                target = int(f.read())
        except (OSError, ValueError):
            target = 1_048_576
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            log.info("raised the open-file limit (RLIMIT_NOFILE) from %d to %d (hard limit %s)",
                     soft, target, "unlimited" if hard == resource.RLIM_INFINITY else hard)
            soft = target
        except (ValueError, OSError) as e:
            log.warning("could not raise the open-file limit (RLIMIT_NOFILE) from %d to %d: %s",
                        soft, target, e)
    else:
        log.info("open-file limit (RLIMIT_NOFILE): %s", soft)
    if soft != resource.RLIM_INFINITY and max_connections < 2_147_483_647 \
            and max_connections > soft - 100:
        log.warning("max.connections=%d is above what the open-file limit %d leaves "
                    "for connections (the broker also needs files for its logs)",
                    max_connections, soft)
    return int(soft)


def _freeze_startup_objects() -> None:
    """Move what startup made (modules, classes, schemas, functions: ~40,000 objects)
    out of the cyclic collector's reach. They live as long as the process; left
    in the oldest generation, each full collection walked them all and paused
    the event loop 15-30 ms, a visible step in produce-to-consume latency."""
    gc.collect()
    gc.freeze()


async def _serve(config: BrokerConfig) -> int:
    from broker.broker import Broker, BrokerFatalError, StartupStopped
    from controller import NodeExistsError

    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    signals = 0

    def on_signal(signum: int, *_: Any) -> None:
        nonlocal signals
        signals += 1
        if signals > 1:
            log.warning("second signal: exiting without a clean shutdown")
            sys.exit(1)
        log.info("received %s, shutting down", signal.Signals(signum).name)
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_signal, sig)
    broker = Broker(config)
    try:
        await broker.start(stop)
    except StartupStopped as e:
        log.info("%s; shutting down", e)
        await broker.shutdown()
        return broker.exit_code
    except (NodeExistsError, BrokerFatalError) as e:   # our id is held by a live broker,
        log.error("%s", e)                               # or no log dir can be used
        await broker.shutdown()
        return 1
    _freeze_startup_objects()
    from broker.loop_lag import LoopLagMonitor   # event-loop stall monitor (issue 17)
    lag = LoopLagMonitor()
    lag.start()
    try:
        await stop.wait()
    finally:
        lag.stop()                               # logs "event loop lag since start ..."
        await broker.shutdown()
    return broker.exit_code
