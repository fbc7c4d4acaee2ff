"""What the client raises when a broker cannot be reached or answered."""

from __future__ import annotations


class KafkaConnectionError(ConnectionError):
    """The connection to a broker could not be made, was lost, or is closed."""

    def __init__(self, message: str, host: str = "", port: int = 0) -> None:
        super().__init__(message)
        self.host = host
        self.port = port


class RequestTimedOut(KafkaConnectionError, TimeoutError):
    """No response within the request's timeout (the connection stays open)."""


class NoCommonVersion(KafkaConnectionError):
    """We and the broker share no version of an API (or it lacks the API)."""

    def __init__(self, message: str, host: str = "", port: int = 0, *,
                 api_key: int = -1) -> None:
        super().__init__(message, host, port)
        self.api_key = api_key


class AuthenticationFailed(KafkaConnectionError):
    """The broker refused us: the TLS handshake failed (certificate or host name), or
    SASL did (mechanism not enabled, wrong credentials: ``error_code`` is the Kafka
    error, -1 for TLS). Not worth retrying with the same settings; the connection is
    closed. ``mechanisms``: the broker's enabled SASL mechanisms, when it named them."""

    def __init__(self, message: str, host: str = "", port: int = 0, *, error_code: int = -1,
                 mechanisms: tuple[str, ...] = ()) -> None:
        super().__init__(message, host, port)
        self.error_code = error_code
        self.mechanisms = mechanisms


class ConsumerError(RuntimeError):
    """The consumer cannot go on: a topic or partition is missing, or a broker
    answered ListOffsets or Fetch with an error it cannot recover from."""


class TransactionError(RuntimeError):
    """A transactional producer's call failed with Kafka error ``error``.
    ``abortable``: the transaction can still be aborted and the producer reused;
    otherwise the producer is unusable."""

    def __init__(self, message: str, error: int, *, abortable: bool = False) -> None:
        super().__init__(message)
        self.error = error
        self.abortable = abortable


class ProducerFenced(TransactionError):
    """A newer producer owns the transactional id (PRODUCER_FENCED,
    INVALID_PRODUCER_EPOCH) or the id may not be used: this producer is done."""

    def __init__(self, message: str, error: int, *, abortable: bool = False) -> None:
        super().__init__(message, error, abortable=False)
