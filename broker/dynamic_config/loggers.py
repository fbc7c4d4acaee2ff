"""BROKER_LOGGER: the broker's loggers and their levels, changed at run time (Kafka's
LoggingController / ConfigAdminManager.validateLogLevelConfigs), never persisted (a
restart brings back the configured levels, as in Kafka).

* Loggers: ``root`` and every Python logger created so far (``logging.Logger`` in the
  manager's dict: our packages' module loggers and the libraries' ones), by name.
* Levels are Kafka's names: OFF, FATAL, ERROR, WARN, INFO, DEBUG, TRACE, ALL; on
  Python's scale FATAL = CRITICAL, WARN = WARNING, TRACE = 5, ALL = 1 and OFF =
  CRITICAL + 10 (nothing passes). Describe shows each logger's *effective* level
  (Kafka: the level it logs at), source DYNAMIC_BROKER_LOGGER_CONFIG.
* IncrementalAlterConfigs SET sets the level; DELETE unsets it (Python's NOTSET: the
  logger inherits its parent's level again; Kafka sets the root's). The root's level
  cannot be deleted (INVALID_CONFIG as Kafka). APPEND/SUBTRACT and the old
  AlterConfigs are INVALID_REQUEST. A logger that does not exist or a level that is
  not one of the above: INVALID_CONFIG naming it. All checked before any change.

The broker's log handlers must not filter by level themselves for DEBUG to appear:
``set_level`` lowers a handler's level to the logger's when needed (handlers of the
root logger only, which is where broker/main.py puts them).
"""

from __future__ import annotations

import logging

from broker.topic_config import ConfigEntry, ConfigSource, ConfigType

ROOT = "root"
TRACE = 5
ALL = 1
OFF = logging.CRITICAL + 10
LEVELS = {"OFF": OFF, "FATAL": logging.CRITICAL, "ERROR": logging.ERROR,
          "WARN": logging.WARNING, "INFO": logging.INFO, "DEBUG": logging.DEBUG,
          "TRACE": TRACE, "ALL": ALL}
_NAMES = {v: k for k, v in LEVELS.items()}


class LoggerConfigError(ValueError):
    """``invalid_request``: INVALID_REQUEST, else INVALID_CONFIG."""

    def __init__(self, message: str, invalid_request: bool = False) -> None:
        super().__init__(message)
        self.invalid_request = invalid_request


def level_name(level: int) -> str:
    if level in _NAMES:
        return _NAMES[level]
    return logging.getLevelName(level)


def loggers() -> dict[str, logging.Logger]:
    """Every logger by name, ``root`` first."""
    out: dict[str, logging.Logger] = {ROOT: logging.getLogger()}
    for name, obj in sorted(logging.root.manager.loggerDict.items()):
        if isinstance(obj, logging.Logger):
            out[name] = obj
    return out


def describe() -> list[ConfigEntry]:
    return [ConfigEntry(name, level_name(lg.getEffectiveLevel()),
                        ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG, ConfigType.STRING, (), "",
                        read_only=False)
            for name, lg in loggers().items()]


def check(changes: dict[str, str | None]) -> dict[str, int | None]:
    """Logger -> new level (None: unset) or LoggerConfigError."""
    known = loggers()
    out: dict[str, int | None] = {}
    for name, level in changes.items():
        if name not in known:
            raise LoggerConfigError(f"Logger {name} does not exist!")
        if level is None:
            if name == ROOT:
                raise LoggerConfigError("Removing the log level of the root logger is "
                                        "not allowed")
            out[name] = None
            continue
        value = LEVELS.get(level.strip().upper())
        if value is None:
            raise LoggerConfigError(
                f"Cannot set the log level of {name} to {level} as it is not a supported "
                f"log level. Valid log levels are {', '.join(LEVELS)}")
        out[name] = value
    return out


def apply(levels: dict[str, int | None]) -> None:
    """Set (or unset) each logger's level; root handlers let the lowest level through."""
    logging.addLevelName(TRACE, "TRACE")
    known = loggers()
    for name, level in levels.items():
        known[name].setLevel(logging.NOTSET if level is None else level)
        if level is not None:
            for handler in logging.getLogger().handlers:
                if handler.level > level:
                    handler.setLevel(level)
        logging.getLogger(__name__).info("logger %s level set to %s", name,
                                         "(inherited)" if level is None else level_name(level))
