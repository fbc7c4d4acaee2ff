"""The faults of the virtual-host campaign (tests/fault/net_campaign.py; issue 16,
items 2 and 4), each applied and healed on a schedule, and the connectivity model that
says which partitions must stay writable while they last.

A fault kind is a function ``apply(world, rng) -> Active``: it applies the fault at
once and returns how to heal it (``Active.heal``) and what it did to the model
(``blocked`` host pairs, ``down`` hosts whose process is not serving, ``disk_off``
brokers with a log dir offline). Holding times are drawn from ``rng`` and kept in
``Active.hold``; the runner sleeps them. Kinds (S = the ZooKeeper session timeout):

  network (blackhole routes between virtual hosts; tests/fault/netns.py)
    leader-isolated        the leader of a partition cut from ZooKeeper and the other
                           brokers while clients still reach it (Jepsen 2013), S+2..S+5 s
    zk-cut-short           a broker cut from every ZooKeeper server, S/3..S/2 s
    zk-cut-long            the same past its session, S+2..S+4 s
    controller-cut         a broker cut from the controller only, 3..8 s
    controller-isolated    the controller cut from everyone (clients too), S+2..S+5 s
    halves                 brokers split 1 | 2, ZooKeeper with one side, 3..10 s
    bridge                 two brokers cut from each other, the third (and ZooKeeper)
                           seeing both, 3..10 s
    one-way                packets from one host to another dropped (brokers and
                           ZooKeeper servers), 3..8 s
  ZooKeeper (a 3-server ensemble; tests/fault/zk_ensemble.py)
    zk-kill                every server SIGKILLed, restarted after 2..6 s
    zk-pause-short         every server SIGSTOPped for S/3..S/2 s
    zk-pause-long          every server SIGSTOPped for S+1..S+3 s
    session-expire         one broker's session expired (its path to ZooKeeper cut
                           until the server expires it; zk_ensemble.expire_session)
    zk-member-partitioned  one server cut from every other host, 3..10 s
    zk-leader-killed       the ensemble's leader SIGKILLed, restarted after 3..8 s
  disk (an ext4 image per broker as its second log dir; tests/fault/disk_faults.py)
    disk-full              a broker's disk filled; healed by freeing it and a restart
    disk-fail              a broker's disk failing (read-only); healed by fsck and a
                           restart
  process
    kill-9                 the leader of a partition SIGKILLed, restarted after 1..4 s
    pause                  the leader of a partition SIGSTOPped for S+1..S+3 s
    shutdown               a broker SIGTERMed (controlled shutdown), restarted
    kill-all               every broker SIGKILLed, restarted in a random order

``MIXABLE`` kinds may be laid over another fault in the same schedule.

The model (``eligible``): a partition must take writes within S + 5 s of a fault when
a ZooKeeper quorum is up and connected, and at least two of its replicas are up, not on
an offline disk, connected to each other, to a quorum member and to the client host.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

CLIENT = "client"


@dataclass
class Active:
    """One applied fault."""

    kind: str
    detail: str
    heal: Callable[[], None]
    hold: float
    blocked: set[tuple[str, str]] = field(default_factory=set)   # (src, dst) directed
    down: set[str] = field(default_factory=set)                  # hosts not serving
    disk_off: set[str] = field(default_factory=set)              # broker hosts


@dataclass
class World:
    """What a fault acts on: the network, the ensemble, the cluster, the disks."""

    net: Any                       # tests/fault/netns.VirtualNetwork
    fc: Any                        # tests/fault/netns_cluster.NetFaultCluster
    ensemble: Any                  # tests/fault/zk_ensemble.ZkEnsemble
    zk_hosts: list[str]
    disks: dict[int, Any]          # broker id -> tests/fault/disk_faults.LoopDisk
    topic: str
    partitions: list[int]
    session_s: float
    log: Callable[[str], None] = print

    def host(self, broker_id: int) -> str:
        return str(self.fc.host_of(broker_id))

    def broker_hosts(self) -> list[str]:
        return [self.host(b.broker_id) for b in self.fc.brokers]

    def leader_of(self, rng: random.Random) -> tuple[int, int]:
        """(partition, its leader) for a random partition with a live leader; with no
        metadata to be had (every broker down), a random partition and broker."""
        try:
            md = self.fc.metadata(self.topic)
        except (AssertionError, OSError, ValueError):    # FaultError is an AssertionError
            md = {}
        cands = [(p, md[p].leader) for p in self.partitions if p in md and md[p].leader >= 0]
        return rng.choice(cands) if cands else (rng.choice(self.partitions),
                                                 rng.choice(self.fc.brokers).broker_id)

    def controller(self) -> int:
        ctl = self.fc.zk_controller()
        return ctl if ctl is not None else self.fc.brokers[0].broker_id


def _pairs(a: Iterable[str], b: Iterable[str]) -> set[tuple[str, str]]:
    a, b = list(a), list(b)
    return {(x, y) for x in a for y in b} | {(y, x) for x in a for y in b}


def _net(w: World, kind: str, fault: Any, hold: float) -> Active:
    return Active(kind, fault.detail, lambda: w.net.heal(fault), hold, set(fault.routes))


# -- network --------------------------------------------------------------------------

def leader_isolated(w: World, rng: random.Random) -> Active:
    p, leader = w.leader_of(rng)
    h = w.host(leader)
    others = [x for x in w.broker_hosts() if x != h] + w.zk_hosts
    a = _net(w, "leader-isolated", w.net.partition([h], others), w.session_s + rng.uniform(2, 5))
    a.detail = f"broker {leader} (leader of p{p}) | {others}"
    return a


def zk_cut(kind: str, long: bool) -> Callable[[World, random.Random], Active]:
    def apply(w: World, rng: random.Random) -> Active:
        h = rng.choice(w.broker_hosts())
        hold = w.session_s + rng.uniform(2, 4) if long else w.session_s * rng.uniform(1 / 3, 1 / 2)
        return _net(w, kind, w.net.partition([h], w.zk_hosts), hold)
    return apply


def controller_cut(w: World, rng: random.Random) -> Active:
    ctl = w.controller()
    others = [b.broker_id for b in w.fc.brokers if b.broker_id != ctl]
    b = rng.choice(others)
    a = _net(w, "controller-cut", w.net.partition([w.host(b)], [w.host(ctl)]),
             rng.uniform(3, 8))
    a.detail = f"broker {b} | controller {ctl}"
    return a


def controller_isolated(w: World, rng: random.Random) -> Active:
    ctl = w.controller()
    a = _net(w, "controller-isolated", w.net.isolate(w.host(ctl)),
             w.session_s + rng.uniform(2, 5))
    a.detail = f"controller {ctl} isolated"
    return a


def halves(w: World, rng: random.Random) -> Active:
    hosts = w.broker_hosts()
    rng.shuffle(hosts)
    one, two = hosts[:1], hosts[1:]
    a_side, b_side = (one + w.zk_hosts, two) if rng.random() < 0.5 else (one, two + w.zk_hosts)
    return _net(w, "halves", w.net.partition(a_side, b_side), rng.uniform(3, 10))


def bridge(w: World, rng: random.Random) -> Active:
    hosts = w.broker_hosts()
    rng.shuffle(hosts)
    a, middle, b = hosts
    # ZooKeeper stays with the middle: it sees both sides, as the middle broker does
    return _net(w, "bridge", w.net.bridge([a], middle, [b]), rng.uniform(3, 10))


def one_way(w: World, rng: random.Random) -> Active:
    hosts = w.broker_hosts() + w.zk_hosts
    src, dst = rng.sample(hosts, 2)
    if src in w.zk_hosts and dst in w.zk_hosts:
        dst = rng.choice(w.broker_hosts())
    return _net(w, "one-way", w.net.drop(src, dst), rng.uniform(3, 8))


# -- ZooKeeper ------------------------------------------------------------------------

def _zk_killed(w: World, kind: str, hosts: list[str], detail: str, hold: float) -> Active:
    """SIGKILL the ZooKeeper servers on ``hosts``; the heal starts them again and
    waits for a quorum."""
    for h in hosts:
        w.ensemble.server(h).kill()

    def heal() -> None:
        for h in hosts:
            w.ensemble.server(h).start()
        w.ensemble.wait_quorum(30)
    return Active(kind, detail, heal, hold, down=set(hosts))


def zk_kill(w: World, rng: random.Random) -> Active:
    return _zk_killed(w, "zk-kill", list(w.zk_hosts), "every ZooKeeper server SIGKILLed",
                      rng.uniform(2, 6))


def zk_pause(kind: str, long: bool) -> Callable[[World, random.Random], Active]:
    def apply(w: World, rng: random.Random) -> Active:
        for h in w.zk_hosts:
            w.ensemble.server(h).pause()

        def heal() -> None:
            for h in w.zk_hosts:
                w.ensemble.server(h).resume()
        hold = w.session_s + rng.uniform(1, 3) if long else w.session_s * rng.uniform(1 / 3, 1 / 2)
        return Active(kind, "every ZooKeeper server SIGSTOPped", heal, hold,
                      down=set(w.zk_hosts))
    return apply


def session_expire(w: World, rng: random.Random) -> Active:
    from tests.fault.zk_ensemble import expire_session
    b = w.controller() if rng.random() < 0.5 else w.leader_of(rng)[1]
    cut, expired, healed = expire_session(w.net, w.fc, b, w.session_s * 3 + 10)
    w.log(f"  session of broker {b} expired {expired - cut:.1f}s after the cut; healed")
    return Active("session-expire", f"broker {b}'s session expired", lambda: None, 0.0)


def zk_member_partitioned(w: World, rng: random.Random) -> Active:
    h = rng.choice(w.zk_hosts)
    a = _net(w, "zk-member-partitioned", w.net.isolate(h), rng.uniform(3, 10))
    a.detail = f"ZooKeeper server {h} ({w.ensemble.server(h).mode() or '?'}) isolated"
    return a


def zk_leader_killed(w: World, rng: random.Random) -> Active:
    h = w.ensemble.leader() or rng.choice(w.zk_hosts)
    return _zk_killed(w, "zk-leader-killed", [h], f"ZooKeeper leader {h} SIGKILLed",
                      rng.uniform(3, 8))


# -- disks ----------------------------------------------------------------------------

def disk_fault(kind: str) -> Callable[[World, random.Random], Active]:
    def apply(w: World, rng: random.Random) -> Active:
        bid = rng.choice(sorted(w.disks))
        disk, b = w.disks[bid], w.fc.broker(bid)
        if kind == "disk-full":
            disk.fill()
        else:
            disk.fail()

        def heal() -> None:
            w.fc.sigcont(b)
            if b.running:
                w.fc.sigterm(b, timeout=60)
            if kind == "disk-full":
                disk.unfill()
            else:
                disk.repair()
            w.fc.restart(b, timeout=60)
        return Active(kind, f"broker {bid}'s second log dir", heal, rng.uniform(4, 8),
                      disk_off={w.host(bid)})
    return apply


# -- processes ------------------------------------------------------------------------

def kill_9(w: World, rng: random.Random) -> Active:
    p, leader = w.leader_of(rng)
    b = w.fc.broker(leader)
    w.fc.sigkill(b)
    return Active("kill-9", f"broker {leader} (leader of p{p}) SIGKILLed",
                  lambda: w.fc.restart(b, timeout=60), rng.uniform(1, 4), down={w.host(leader)})


def pause(w: World, rng: random.Random) -> Active:
    p, leader = w.leader_of(rng)
    b = w.fc.broker(leader)
    w.fc.sigstop(b)
    return Active("pause", f"broker {leader} (leader of p{p}) SIGSTOPped",
                  lambda: w.fc.sigcont(b), w.session_s + rng.uniform(1, 3),
                  down={w.host(leader)})


def shutdown(w: World, rng: random.Random) -> Active:
    b = rng.choice(w.fc.brokers)
    code, took = w.fc.sigterm(b, timeout=60)
    return Active("shutdown", f"broker {b.broker_id} SIGTERMed: exit {code} after {took:.1f}s",
                  lambda: w.fc.restart(b, timeout=60), rng.uniform(1, 3),
                  down={w.host(b.broker_id)})


def kill_all(w: World, rng: random.Random) -> Active:
    order = rng.sample(w.fc.brokers, len(w.fc.brokers))
    for b in w.fc.brokers:
        w.fc.sigkill(b)

    def heal() -> None:
        dead = [b for b in order if not b.running]     # a fault laid over may have restarted one
        for b in dead:
            b.spawn()
        for b in dead:
            b.wait_ready(60)
    return Active("kill-all", f"every broker SIGKILLed; restart order "
                  f"{[b.broker_id for b in order]}", heal, rng.uniform(1, 3),
                  down=set(w.broker_hosts()))


KINDS: dict[str, Callable[[World, random.Random], Active]] = {
    "leader-isolated": leader_isolated,
    "zk-cut-short": zk_cut("zk-cut-short", long=False),
    "zk-cut-long": zk_cut("zk-cut-long", long=True),
    "controller-cut": controller_cut,
    "controller-isolated": controller_isolated,
    "halves": halves,
    "bridge": bridge,
    "one-way": one_way,
    "zk-kill": zk_kill,
    "zk-pause-short": zk_pause("zk-pause-short", long=False),
    "zk-pause-long": zk_pause("zk-pause-long", long=True),
    "session-expire": session_expire,
    "zk-member-partitioned": zk_member_partitioned,
    "zk-leader-killed": zk_leader_killed,
    "disk-full": disk_fault("disk-full"),
    "disk-fail": disk_fault("disk-fail"),
    "kill-9": kill_9,
    "pause": pause,
    "shutdown": shutdown,
    "kill-all": kill_all,
}
MIXABLE = ("one-way", "kill-9", "pause", "zk-member-partitioned", "zk-cut-short")
# healed last: a broker restarted while ZooKeeper or the network is still down would
# wait for them (its registration, its peers)
PROCESS_KINDS = ("kill-9", "pause", "shutdown", "kill-all", "disk-full", "disk-fail")
assert all(k in KINDS for k in MIXABLE + PROCESS_KINDS)


def heal_order(actives: Sequence[Active]) -> list[Active]:
    """The network and ZooKeeper first, then the processes; each group latest first."""
    rev = list(reversed(actives))
    return ([a for a in rev if a.kind not in PROCESS_KINDS]
            + [a for a in rev if a.kind in PROCESS_KINDS])


# -- the model ------------------------------------------------------------------------

def _connected(a: str, b: str, blocked: set[tuple[str, str]]) -> bool:
    """TCP needs both directions."""
    return (a, b) not in blocked and (b, a) not in blocked


def eligible(partitions: dict[int, Sequence[str]], zk_hosts: Sequence[str],
             faults: Sequence[Active]) -> set[int]:
    """The partitions (id -> their replicas' hosts) that must stay writable while
    ``faults`` last (the rule of the module docstring)."""
    blocked = set().union(*(f.blocked for f in faults)) if faults else set()
    down = set().union(*(f.down for f in faults)) if faults else set()
    disk_off = set().union(*(f.disk_off for f in faults)) if faults else set()
    up = [z for z in zk_hosts if z not in down]
    need = len(zk_hosts) // 2 + 1
    quorum: set[str] = set()
    for group in combinations(up, need):
        if all(_connected(x, y, blocked) for x, y in combinations(group, 2)):
            quorum |= set(group)
    if not quorum:
        return set()
    out = set()
    for p, hosts in partitions.items():
        ok = [h for h in hosts if h not in down and h not in disk_off
              and _connected(h, CLIENT, blocked)
              and any(_connected(h, z, blocked) for z in quorum)]
        if any(_connected(x, y, blocked) for x, y in combinations(ok, 2)):
            out.add(p)
    return out


__all__ = ["Active", "CLIENT", "KINDS", "MIXABLE", "PROCESS_KINDS", "World", "eligible",
           "heal_order"]
