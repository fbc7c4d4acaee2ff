"""Version ranges in Kafka's schema vocabulary.

A range is written "N+" (N and up), "N-M" (inclusive), "N" (just one) or "none"
(never). Open ranges are closed by the message's own valid-versions range when a
codec is built, so membership never needs to know the API's maximum.
"""

from __future__ import annotations

from dataclasses import dataclass

_OPEN = 1 << 15  # versions are int16 on the wire; anything above is "no upper bound"


@dataclass(frozen=True, slots=True)
class VersionRange:
    lo: int
    hi: int  # inclusive; _OPEN for "N+"; lo > hi means empty

    @classmethod
    def parse(cls, text: str | VersionRange | None) -> VersionRange:
        if isinstance(text, VersionRange):
            return text
        if text is None or text == "none":
            return NONE
        text = text.strip()
        if text.endswith("+"):
            return cls(int(text[:-1]), _OPEN)
        if "-" in text:
            lo, hi = text.split("-", 1)
            return cls(int(lo), int(hi))
        n = int(text)
        return cls(n, n)

    def __contains__(self, version: int) -> bool:
        return self.lo <= version <= self.hi

    @property
    def empty(self) -> bool:
        return self.lo > self.hi

    def intersect(self, other: VersionRange) -> VersionRange:
        return VersionRange(max(self.lo, other.lo), min(self.hi, other.hi))

    def __str__(self) -> str:
        if self.empty:
            return "none"
        if self.hi == _OPEN:
            return f"{self.lo}+"
        return f"{self.lo}" if self.lo == self.hi else f"{self.lo}-{self.hi}"


NONE = VersionRange(1, 0)
ALL = VersionRange(0, _OPEN)
