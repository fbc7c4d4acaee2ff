"""Counts the controller keeps for the broker's metrics (Kafka's ControllerStats):
leader elections and their time, unclean elections. Plain ints and floats,
changed by the event loop's one controller writer; the broker's metrics read them
at scrape time (broker/metrics/).

* ``leader_elections`` / ``leader_election_ms``: election rounds (one per
  controller step that elected at least one leader: a broker failure, a
  controlled shutdown, an admin's ElectLeaders, the auto rebalance) and the
  time they took, as Kafka's LeaderElectionRateAndTimeMs timer counts events.
* ``unclean_leader_elections``: partitions given a leader from outside the ISR.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class ControllerStats:
    leader_elections: int = 0
    leader_election_ms: float = 0.0
    unclean_leader_elections: int = 0

    def record_elections(self, elected: int, unclean: int, ms: float) -> None:
        if elected:
            self.leader_elections += 1
            self.leader_election_ms += ms
        self.unclean_leader_elections += unclean
