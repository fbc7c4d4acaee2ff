"""The broker's network layer: listeners' connections and the limits on them
(issue 17, "Connections as Kafka").

Map:

| module | what it holds |
| --- | --- |
| ``connection.py`` | ``Connection``: one client connection; frames in, handler calls, responses out in order; idle and request timeouts, back-pressure, KIP-219 muting |
| ``frame_stream.py`` | ``FrameStream``: a plaintext connection's asyncio protocol; frames received in place into a ``FrameReceiver`` (no StreamReader copies), the writer calls ``Connection`` makes, large file slices of responses by sendfile (``zero_copy_for``: fetch.zero.copy, all peers but loopback ones by default) |
| ``connection_quotas.py`` | ``ConnectionQuotas``: max.connections and listener.name.<l>.max.connections (the accept loop waits), max.connections.per.ip and its overrides (closed at once), max.connection.creation.rate (KIP-612: accepting is delayed), the protected inter-broker listener |
| ``request_memory.py`` | ``RequestMemoryPool`` (queued.max.request.bytes: no new frame is read while it is exhausted) and ``RequestQueue`` (queued.max.requests: slots for requests in their handler) |
| ``limits.py`` | ``NetworkLimits``: the three above plus the live connections, one per broker, shared by its listeners |
| ``log_throttle.py`` | ``LogThrottle``: a bound on the log lines hostile input can cause |

The accept loop that applies the quotas is ``broker.server.KafkaServer``.
Nothing here imports a handler: handlers see a connection only through
``broker.context.ConnectionInfo``.
"""
