"""ControllerStats (controller/stats.py), which the broker's metrics read: a broker
failure that moves leaderships counts one election round; an unclean election
counts its partitions; OfflinePartitionsCount follows the partition states."""

from __future__ import annotations

from tests.unit.controller.test_controller import active, aio, settle
from tests.unit.controller.test_failover_admin import alter_request, cluster, topic


@aio
async def test_elections_unclean_and_offline_counts() -> None:
    _server, nodes = await cluster(3)
    a = active(nodes)
    ctl = a.controller
    await topic(nodes, "clean", {0: [1, 2]})
    await topic(nodes, "dirty", {0: [1, 2]}, {"unclean.leader.election.enable": "true"})
    await topic(nodes, "moves", {0: [1, 2]})
    assert ctl.offline_partition_count() == 0
    before = ctl.stats.leader_elections
    e1 = ctl.ctx.live[1].epoch
    for t in ("clean", "dirty"):      # broker 2 falls out of these ISRs
        await ctl.alter_partition(alter_request(1, e1, [(t, 0, 0, [1], 0)], 0), 0)
    await nodes[1].store.close()      # broker 1, the leader of all three, dies
    await settle(*nodes)
    # one round elected "moves" (clean) and "dirty" (unclean); "clean" stays offline
    assert ctl.stats.leader_elections == before + 1
    assert ctl.stats.leader_election_ms >= 0
    assert ctl.stats.unclean_leader_elections == 1
    assert ctl.offline_partition_count() == 1
    passive = next(n for n in nodes if n is not a)
    assert passive.controller.offline_partition_count() == 0     # only the active one
