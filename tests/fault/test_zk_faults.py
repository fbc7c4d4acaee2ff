"""ZooKeeper faults under a queue workload (issue 16, item 2), on virtual hosts.

Three brokers, one topic of 6 partitions, RF 3, min.insync.replicas=2; an idempotent
acks=all QueueProducer and an assigned QueueConsumer run in the client host for the
whole test while the faults follow one another:

  standalone ZooKeeper (test_single_zookeeper_faults)
    a  the server killed (SIGKILL) for 5 s, then restarted on the same data dir
    b  the server paused (SIGSTOP) for 3 s: longer than the brokers' read timeout
       (2/3 of the 4 s session: they see the connection lost), shorter than the session
    c  the server paused for the session timeout + 3 s: on SIGCONT ZooKeeper expires
       the sessions whose timeout passed, unless a broker's pending reconnect is served
       first (a race inside ZooKeeper: both seen, usually every session expires); the
       brokers register again by themselves and elect a controller
    d  one broker's session forced to expire (zk_ensemble.expire_session): a leader
       that is not the controller, then the controller
  three-server ensemble (test_ensemble_faults)
    e  one member (the one most brokers are connected to) partitioned from every other
       host for the session timeout + 2 s: the other two keep (or elect) a leader; its
       clients move to them
    f  the ensemble's leader killed (SIGKILL), restarted 5 s later
    d  the controller's session forced to expire, through the ensemble

After each fault is healed the cluster must settle (quorum, every broker registered on
a session that is connected, a controller, every ISR full and every follower's log
moving) before the next one; before each ``d`` a preferred-leader election spreads the
leaderships again (after ``c`` the first broker back took them all). Availability, per
fault and partition: the first acknowledged write among those *sent* after the fault
(after the heal), in seconds from the fault (the heal), and the longest time without
any acknowledgement from the fault until the cluster settled again (where a write that
stays fenced or leaderless shows; a first ack after the fault can come before the
fault has bitten). The slowest partition is printed and bounded: session timeout + 5 s
from the fault, 5 s from the heal, session timeout + 5 s for a gap. At the end the
producer is drained, every partition read whole from its leader, and the queue checker
must find no anomaly. Where ZooKeeper kept every session (a, b, e, f) a broker that
comes back on a new one is a warning, not a failure: it reconnected too late.

Needs root, iproute2, Java 17 and ZooKeeper's jars, as tests/fault/test_netns.py.
"""

from __future__ import annotations

import contextlib
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from protocol.api_keys import ApiKey
from protocol.spec import api
from tests.fault import queue_checker
from tests.fault.availability import AckTimes
from tests.fault.cluster_faults import FAULT_OVERRIDES, FaultError, wait_for
from tests.fault.netns import VirtualNetwork, root_sockets_toward
from tests.fault.netns_cluster import NetFaultCluster, skip_reason, virtual_cluster
from tests.fault.queue_history import QueueHistory
from tests.fault.queue_workload import QueueConsumer, QueueProducer, final_reads
from tests.fault.zk_ensemble import ZkEnsemble, expire_session

pytestmark = [pytest.mark.integration, pytest.mark.slow]

BROKERS = ["b0", "b1", "b2"]
ENSEMBLE = ("zk1", "zk2", "zk3")
TOPIC = "zkfaults"
PARTS = list(range(6))
SESSION_S = int(FAULT_OVERRIDES["zookeeper.session.timeout.ms"]) / 1000
FROM_FAULT_S = SESSION_S + 5
FROM_HEAL_S = 5.0
SETTLE_S = 60.0


@dataclass
class Window:
    """One fault: when it was applied and healed, and what followed."""

    name: str
    fault: float = 0.0                 # monotonic
    heal: float = 0.0
    end: float = 0.0                   # settled again
    from_fault: dict[int, float] = field(default_factory=dict)   # partition -> seconds
    from_heal: dict[int, float] = field(default_factory=dict)
    gaps: dict[int, float] = field(default_factory=dict)
    expired: list[int] = field(default_factory=list)             # re-registered brokers
    victim: int | None = None                                    # d: whose session
    controller: tuple[int | None, int | None] = (None, None)     # before, after

    @staticmethod
    def _slowest(delays: dict[int, float]) -> str:
        if len(delays) < len(PARTS):
            return f"no ack on {sorted(set(PARTS) - set(delays))}"
        p = max(delays, key=lambda q: delays[q])
        return f"{delays[p]:5.2f}s (p{p})"

    def line(self) -> str:
        return (f"{self.name:56} from fault {self._slowest(self.from_fault):10}  "
                f"from heal {self._slowest(self.from_heal):10}  "
                f"longest gap {self._slowest(self.gaps):10}  "
                f"sessions expired {self.expired or 'none'}; controller "
                f"{self.controller[0]} -> {self.controller[1]}")

    def problems(self) -> list[str]:
        out = []
        for what, delays, bound in (("first acks from the fault", self.from_fault,
                                     FROM_FAULT_S),
                                    ("first acks from the heal", self.from_heal, FROM_HEAL_S),
                                    ("gaps between acks", self.gaps, FROM_FAULT_S)):
            late = {p: round(d, 2) for p, d in delays.items() if d > bound}
            missing = sorted(set(PARTS) - set(delays))
            if late or missing:
                out.append(f"{self.name}: {what} longer than {bound:g}s: {late}, "
                           f"no ack at all on {missing}")
        return out


def longest_gaps(history: QueueHistory, start: float, end: float) -> dict[int, float]:
    """Partition -> the longest time between consecutive acknowledgements (any write's)
    from the last one before ``start`` up to ``end`` (which counts as one)."""
    part: dict[int, int] = {}
    acks: dict[int, list[float]] = {}
    for op in history.snapshot():
        if op.kind != "send" or op.id is None:
            continue
        if op.type == "invoke":
            part[op.id] = int(op.partition)  # type: ignore[arg-type]
        elif op.type == "ok" and op.time <= end:
            ts = acks.setdefault(part[op.id], [])
            if op.time < start:
                ts[:] = [op.time]
            else:
                ts.append(op.time)
    return {p: max(b - a for a, b in zip(ts, [*ts[1:], end], strict=True))
            for p, ts in acks.items() if ts}


# --------------------------------------------------------------------------------------
# the run


@dataclass
class Run:
    net: VirtualNetwork
    fc: NetFaultCluster
    history: QueueHistory
    windows: list[Window] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.acks = AckTimes(self.history)

    def first_acks(self, since: float) -> dict[int, float]:
        """Partition -> seconds from ``since`` to its first acknowledged write sent at
        or after ``since`` (partitions with none yet are missing)."""
        return {p: t - since for p, t in self.acks.first_acks(PARTS, since).items()}

    @property
    def ensemble(self) -> ZkEnsemble:
        assert self.fc.ensemble is not None
        return self.fc.ensemble

    def registrations(self) -> dict[int, tuple[int, int]]:
        """Broker id -> (czxid, owning session) of its /brokers/ids znode (a new czxid:
        registered again, on a new session)."""
        zk = self.fc.zk()
        out = {}
        for b in self.fc.brokers:
            st = zk.exists(f"/brokers/ids/{b.broker_id}")
            if st is not None:
                out[b.broker_id] = (st.czxid, st.ephemeralOwner)
        return out

    def registered_and_connected(self) -> bool:
        """Every broker registered by a session that is connected to a server now
        (after ZooKeeper restarted, a session is kept until it times out although its
        client has not come back yet)."""
        regs, live = self.registrations(), self.ensemble.sessions()
        return len(regs) == len(self.fc.brokers) and all(o in live for _, o in regs.values())

    def settle(self) -> None:
        """Quorum, every broker registered and connected, a controller, every ISR full
        and every replica replicating."""
        fc = self.fc
        self.ensemble.wait_quorum(SETTLE_S)
        wait_for("every broker registered and connected", self.registered_and_connected,
                 SETTLE_S, 0.2)
        wait_for("a controller", fc.zk_controller, SETTLE_S, 0.2)
        try:
            fc.wait_isr_full(TOPIC, len(PARTS), SETTLE_S)
            self.wait_replicating()
        except FaultError as e:
            raise FaultError(f"{e}\n{self.replication_state()}") from None

    def wait_replicating(self, timeout: float = 10.0) -> None:
        """Until every replica's log (on disk) reaches where its leader's was when
        called: a full ISR can hide a follower that stopped fetching for up to
        replica.lag.time.max.ms."""
        fc = self.fc
        md = wait_for(f"{TOPIC}: metadata of every partition",  # all() of none would pass
                      lambda: m if set(m := fc.metadata(TOPIC)) == set(PARTS) else None,
                      timeout, 0.2)
        target = {p: fc.disk_leo(pi.leader, TOPIC, p) for p, pi in md.items()}
        wait_for("every replica replicating", lambda: all(
            fc.disk_leo(r, TOPIC, p) >= target[p] for p, pi in md.items() for r in pi.replicas),
            timeout, 0.2)

    def replication_state(self) -> str:
        """Per partition: leader, epoch, ISR (a live broker's metadata) and every
        replica's log end on disk; a follower stuck far below its leader shows."""
        fc, lines = self.fc, []
        with contextlib.suppress(Exception):
            for p, pi in sorted(fc.metadata(TOPIC).items()):
                leos = {b.broker_id: fc.disk_leo(b.broker_id, TOPIC, p) for b in fc.brokers}
                lines.append(f"  {TOPIC}-{p}: leader {pi.leader} epoch {pi.leader_epoch} "
                             f"isr {list(pi.isr)} log ends {leos}")
        return "\n".join(lines)

    def preferred_leaders(self) -> None:
        """ElectLeaders (preferred) for the topic, until every partition is led by its
        first replica again: after a fault that moved leaderships (every session
        expired: the first broker back became controller and took them all), so that
        the next victim leads something."""
        req = api(ApiKey.ELECT_LEADERS).request
        tps = [req.structs["TopicPartitions"].new(topic=TOPIC, partitions=PARTS)]

        def elected() -> bool:
            ctl = self.fc.zk_controller()
            with self.fc.client(ctl) as c:
                c.request(ApiKey.ELECT_LEADERS, 1, req.new(election_type=0,
                                                           topic_partitions=tps,
                                                           timeout_ms=10_000))
            md = self.fc.metadata(TOPIC)        # every partition, not all() of none
            return set(md) == set(PARTS) and all(pi.leader == pi.replicas[0]
                                                 for pi in md.values())
        wait_for("preferred leaders", elected, SETTLE_S, 0.5)

    def fault(self, name: str, apply: Callable[[Window], None],
              sessions_kept: bool = False) -> Window:
        """Settle, apply and heal (``apply`` sets ``w.fault`` and ``w.heal``), settle;
        then measure availability. ``sessions_kept``: ZooKeeper kept every session
        through the fault, so a broker on a new session is worth a warning (it came
        back to ZooKeeper too late, not a failure of this test)."""
        self.settle()
        w = Window(name)
        self.windows.append(w)
        before = wait_for("registrations", self.registrations, 10)
        w.controller = (self.fc.zk_controller(), None)
        print(f"-- {time.strftime('%H:%M:%S')} {name}")
        apply(w)
        try:
            wait_for(f"{name}: an ack on every partition after the heal",
                     lambda: len(self.first_acks(w.heal)) == len(PARTS), 30, 0.2)
        finally:
            w.from_fault = self.first_acks(w.fault)
            w.from_heal = self.first_acks(w.heal)
        self.settle()
        w.end = time.monotonic()
        w.gaps = longest_gaps(self.history, w.fault, w.end)
        after = self.registrations()
        w.expired = sorted(i for i, (cz, _) in after.items() if before[i][0] != cz)
        w.controller = (w.controller[0], self.fc.zk_controller())
        print(f"   {w.line()}")
        if sessions_kept and w.expired:
            warnings.warn(f"{w.name}: ZooKeeper kept every session, yet brokers "
                          f"{w.expired} registered again on a new one (they reconnected "
                          "after their session timed out)", stacklevel=2)
        return w


@contextlib.contextmanager
def _running(tmp: Path, zk_hosts: tuple[str, ...]) -> Iterator[Run]:
    """A virtual cluster with the topic, the producer and the consumer running; at
    the end the producer drained, final reads, the checker, the availability table."""
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    history = QueueHistory()
    with virtual_cluster(tmp, BROKERS, zk_hosts=zk_hosts) as (net, fc):
        fc.create_topic(TOPIC, partitions=len(PARTS), rf=3,
                        configs={"min.insync.replicas": "2"})
        producer = fc.in_client(lambda: QueueProducer(fc.bootstrap, TOPIC, PARTS, history,
                                                      acks="all", idempotent=True,
                                                      rate=300).start())
        consumer = fc.in_client(lambda: QueueConsumer(fc.bootstrap, TOPIC, PARTS,
                                                      history).start())
        run = Run(net, fc, history)
        try:
            wait_for("the consumer reads", lambda: consumer.count >= 200, 30)
            yield run
            run.settle()
            assert producer.stop(60) == 0, f"undelivered sends; errors {producer.errors}"
            assert producer.fatal is None, producer.fatal
            consumer.stop()
            final_reads(fc, TOPIC, PARTS, history)
            assert root_sockets_toward(net.subnet) == []
        finally:
            producer.close()
            consumer.stop()
            net.heal()
            print("availability, slowest partition: first ack of a write sent after the "
                  "fault / the heal, longest time without an ack from the fault until "
                  f"settled again; bounds {FROM_FAULT_S:g}s / {FROM_HEAL_S:g}s / "
                  f"{FROM_FAULT_S:g}s:")
            for w in run.windows:
                print("  " + w.line())
            print(f"producer errors: {producer.errors}")
            history.save(tmp / "history.jsonl")
    report = queue_checker.check(history)
    print(report.summary())
    assert report.ok, report.summary()
    problems = [p for w in run.windows for p in w.problems()]
    assert not problems, "\n".join(problems)


# --------------------------------------------------------------------------------------
# the faults


def _hold(w: Window, start: Callable[[], Any], seconds: float,
          undo: Callable[[], object] | None = None) -> None:
    """Start a fault, hold it ``seconds`` and undo it (``undo``, else what ``start``
    returned), noting both moments in ``w``."""
    w.fault = time.monotonic()
    started = start()
    try:
        time.sleep(seconds)
    finally:
        w.heal = time.monotonic()
        (undo or started)()


def _kill_restart(run: Run, host: str, down_s: float = 5.0) -> Callable[[Window], None]:
    def apply(w: Window) -> None:
        server = run.ensemble.server(host)
        _hold(w, server.kill, down_s, undo=server.start)
    return apply


def _pause(run: Run, host: str, paused_s: float) -> Callable[[Window], None]:
    def apply(w: Window) -> None:
        server = run.ensemble.server(host)
        _hold(w, server.pause, paused_s, undo=server.resume)
    return apply


def _expire(run: Run, pick: Callable[[], int]) -> Callable[[Window], None]:
    def apply(w: Window) -> None:
        victim = w.victim = pick()
        led = sorted(p for p, pi in run.fc.metadata(TOPIC).items() if pi.leader == victim)
        assert led, f"broker {victim} leads no partition of {TOPIC}"
        w.name += f" (broker {victim}, led p{','.join(map(str, led))})"
        ex = expire_session(run.net, run.fc, victim, SESSION_S + 20)
        w.fault, w.heal = ex.cut, ex.healed
        print(f"   broker {victim}: expired {ex.expired - ex.cut:.2f}s after the cut")
    return apply


def _partition_member(run: Run, cut_s: float) -> Callable[[Window], None]:
    def apply(w: Window) -> None:
        ens, net = run.ensemble, run.net
        owners = {owner: i for i, (_, owner) in run.registrations().items()}
        brokers = {s.host: sorted(owners[o] for o in s.sessions() if o in owners)
                   for s in ens.servers}
        modes = ens.modes()
        # the member most brokers talk to (they must move), a follower if that ties
        member = max(ens.servers, key=lambda s: (len(brokers[s.host]),
                                                 modes[s.host] == "follower"))
        w.name += f" ({member.host}, {modes[member.host]} of brokers {brokers[member.host]})"
        others = [h for h in net.hosts if h != member.host]
        _hold(w, lambda: net.partition([member.host], others).heal, cut_s)
    return apply


def _kill_leader(run: Run, down_s: float = 5.0) -> Callable[[Window], None]:
    def apply(w: Window) -> None:
        leader = run.ensemble.leader()
        assert leader is not None
        w.name += f" ({leader})"
        _kill_restart(run, leader, down_s)(w)
    return apply


def _led_non_controller(run: Run) -> int:
    ctl = run.fc.zk_controller()
    return min({pi.leader for pi in run.fc.metadata(TOPIC).values()} - {ctl})


def _controller(run: Run) -> int:
    ctl = run.fc.zk_controller()
    assert ctl is not None
    return ctl


# --------------------------------------------------------------------------------------
# the tests


def test_single_zookeeper_faults(tmp_path: Path) -> None:
    with _running(tmp_path, ("zk",)) as run:
        run.fault("a: ZooKeeper killed 5 s, restarted", _kill_restart(run, "zk"),
                  sessions_kept=True)
        run.fault(f"b: ZooKeeper paused {SESSION_S - 1:g} s", _pause(run, "zk", SESSION_S - 1),
                  sessions_kept=True)
        w = run.fault(f"c: ZooKeeper paused {SESSION_S + 3:g} s",
                      _pause(run, "zk", SESSION_S + 3))
        assert w.controller[1] is not None
        run.preferred_leaders()
        w = run.fault("d: session expired, a leader", _expire(run, lambda:
                                                              _led_non_controller(run)))
        assert w.expired == [w.victim] and w.controller[0] == w.controller[1]
        run.preferred_leaders()
        w = run.fault("d: session expired, the controller",
                      _expire(run, lambda: _controller(run)))
        assert w.expired == [w.victim] and w.controller[1] not in (None, w.victim)


def test_ensemble_faults(tmp_path: Path) -> None:
    with _running(tmp_path, ENSEMBLE) as run:
        run.fault(f"e: a member partitioned {SESSION_S + 2:g} s",
                  _partition_member(run, SESSION_S + 2), sessions_kept=True)
        run.fault("f: the ensemble's leader killed 5 s", _kill_leader(run), sessions_kept=True)
        run.preferred_leaders()
        w = run.fault("d: session expired, the controller",
                      _expire(run, lambda: _controller(run)))
        assert w.expired == [w.victim] and w.controller[1] not in (None, w.victim)
