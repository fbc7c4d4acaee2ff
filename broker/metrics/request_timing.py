"""Per-API request timing (Kafka's RequestMetrics): how long each request spent
in each stage, as histograms per API, and how many requests per API and version.

Stages, on the connection's clock (``time.perf_counter``), as Kafka splits them:

    received ──queue──> handler starts ──local──┬─remote─┐──> handler returns
      ──response queue──> (the response before it written) ──response send──> written

* requestqueuetimems: waiting for a slot of the request queue (queued.max.requests);
* localtimems: the handler's own time (its total less remote);
* remotetimems: time parked in a purgatory (acks=all produce waiting for the HW, a
  fetch waiting for min_bytes, a join waiting for the group): each DelayedOperation
  adds the time from being watched to completing to the ``RequestClock`` of the
  request that made it, found through a context variable (``CURRENT``, both in
  coordinator/runtime/purgatory.py) the connection sets around the handler call;
* responsequeuetimems: waiting for the responses before it (responses go in order);
* responsesendtimems: writing the response (until the transport took it);
* totaltimems: received to written.

A Fetch is recorded under ``Fetch`` and under ``FetchConsumer`` or
``FetchFollower``, as Kafka does. Cost per request: a few ``perf_counter`` calls and
one ``record`` (seven bisects and adds), on the event loop thread only.
"""

from __future__ import annotations

import bisect

from protocol.spec import wire_apis

# bucket upper bounds, in ms (Prometheus histograms; the last bucket is +Inf)
LATENCY_BUCKETS_MS = (0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0,
                      2500.0, 5000.0, 10000.0, 30000.0)
STAGES = ("totaltimems", "requestqueuetimems", "localtimems", "remotetimems",
          "responsequeuetimems", "responsesendtimems")


class StageHistograms:
    """The six stage histograms of one request name: counts per bucket, sums, count."""

    __slots__ = ("counts", "sums", "count")

    def __init__(self) -> None:
        n = len(LATENCY_BUCKETS_MS) + 1
        self.counts = [[0] * n for _ in STAGES]
        self.sums = [0.0] * len(STAGES)
        self.count = 0


def request_name(api_key: int) -> str:
    """Kafka's ApiKeys name: the schema's name without ``Request``."""
    apis = wire_apis()
    if api_key in apis:
        name = apis[api_key].request.name
        return name[:-len("Request")] if name.endswith("Request") else name
    return f"Unknown{api_key}"


class RequestMetrics:
    def __init__(self) -> None:
        self.stages: dict[str, StageHistograms] = {}
        self.requests: dict[tuple[str, int], int] = {}      # (name, version) -> count
        self._names: dict[int, str] = {}

    def name_of(self, api_key: int) -> str:
        name = self._names.get(api_key)
        if name is None:
            name = self._names[api_key] = request_name(api_key)
        return name

    def record(self, api_key: int, version: int, fetch_from: str | None, received: float,
               started: float, handled: float, remote: float, queued_done: float,
               written: float) -> None:
        """One answered (or dropped) request; times from ``perf_counter``;
        ``fetch_from`` "Consumer"/"Follower" for a Fetch, else None."""
        name = self.name_of(api_key)
        key = (name, version)
        self.requests[key] = self.requests.get(key, 0) + 1
        local = handled - started - remote
        values = ((written - received) * 1000.0, (started - received) * 1000.0,
                  (local if local > 0 else 0.0) * 1000.0, remote * 1000.0,
                  (queued_done - handled) * 1000.0, (written - queued_done) * 1000.0)
        self._add(name, values)
        if fetch_from is not None:
            self._add("Fetch" + fetch_from, values)

    def _add(self, name: str, values: tuple[float, ...]) -> None:
        h = self.stages.get(name)
        if h is None:
            h = self.stages[name] = StageHistograms()
        counts, sums = h.counts, h.sums
        find = bisect.bisect_left
        for i, v in enumerate(values):
            counts[i][find(LATENCY_BUCKETS_MS, v)] += 1
            sums[i] += v
        h.count += 1
