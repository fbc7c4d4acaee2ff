"""Output of ``pybroker consumer-groups`` (pure: no sockets, no event loop).

Kafka 3.9's ConsumerGroupCommand prints with printf formats; each formatter
quotes the one it follows. Also here: the ConsumerProtocol assignment decoder
(members' assignments are shown per topic), the described group and the rows
built from it for --describe, the offset clamp of --reset-offsets and the
Printer the actions write through. tools/consumer_groups.py re-exports
every name.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import IO, Any

from protocol.errors import ErrorCode

MISSING = "-"
TP = tuple[str, int]


# -- ConsumerProtocol assignment ------------------------------------------------------------

def decode_assignment(data: bytes) -> list[TP]:
    """ConsumerProtocolAssignment (every version 0..3):
    int16 version | int32 n, n x (int16 len + topic, int32 m, m x int32 partition) |
    nullable bytes user_data (v1+ may append more; ignored). Empty/garbled -> []."""
    out: list[TP] = []
    try:
        pos = 2
        (n,) = struct.unpack_from(">i", data, pos)
        pos += 4
        for _ in range(max(n, 0)):
            (tlen,) = struct.unpack_from(">h", data, pos)
            topic = data[pos + 2:pos + 2 + tlen].decode()
            pos += 2 + tlen
            (m,) = struct.unpack_from(">i", data, pos)
            parts = struct.unpack_from(f">{max(m, 0)}i", data, pos + 4)
            pos += 4 + 4 * max(m, 0)
            out.extend((topic, p) for p in parts)
    except (struct.error, UnicodeDecodeError):
        return []
    return out


# -- described groups -----------------------------------------------------------------------

@dataclass(frozen=True)
class GroupDescription:
    group: str
    state: str
    protocol_type: str
    protocol: str
    coordinator: tuple[int, str, int]       # node id, host, port
    members: list[Any]                      # DescribedGroupMember structs


# -- formatting (pure) ----------------------------------------------------------------------

@dataclass(frozen=True)
class OffsetRow:
    group: str
    topic: str | None
    partition: int | None
    offset: int | None            # committed; None = none committed
    log_end: int | None
    consumer_id: str = MISSING
    host: str = MISSING
    client_id: str = MISSING

    @property
    def lag(self) -> int | None:
        if self.offset is None or self.offset == -1 or self.log_end is None:
            return None
        return self.log_end - self.offset


@dataclass(frozen=True)
class MemberRow:
    group: str
    consumer_id: str
    instance_id: str
    host: str
    client_id: str
    assignment: tuple[TP, ...]


def _s(v: object) -> str:
    return MISSING if v is None else str(v)


def format_offsets(rows: list[OffsetRow]) -> list[str]:
    """"\\n%-Gs %-Ts %-10s %-15s %-15s %-15s %-Cs %-Hs %s" per line (widths >= 15)."""
    g = max([15] + [len(r.group) for r in rows])
    t = max([15] + [len(_s(r.topic)) for r in rows])
    c = max([15] + [len(r.consumer_id) for r in rows])
    h = max([15] + [len(r.host) for r in rows])

    def line(*cols: object) -> str:
        v = [str(x) for x in cols]
        return (f"{v[0]:<{g}} {v[1]:<{t}} {v[2]:<10} {v[3]:<15} {v[4]:<15} {v[5]:<15} "
                f"{v[6]:<{c}} {v[7]:<{h}} {v[8]}")
    out = ["", line("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                    "CONSUMER-ID", "HOST", "CLIENT-ID")]
    out += [line(r.group, _s(r.topic), _s(r.partition), _s(r.offset), _s(r.log_end), _s(r.lag),
                 r.consumer_id, r.host, r.client_id) for r in rows]
    return out


def format_members(rows: list[MemberRow], verbose: bool) -> list[str]:
    """"%-Gs %-Cs [%-Is] %-Hs %-Ls %-15s " [+ ASSIGNMENT "(0,1), (2)" per topic]."""
    g = max([15] + [len(r.group) for r in rows])
    c = max([15] + [len(r.consumer_id) for r in rows])
    i = max([17] + [len(r.instance_id) for r in rows])
    h = max([15] + [len(r.host) for r in rows])
    cl = max([15] + [len(r.client_id) for r in rows])
    with_instance = any(r.instance_id for r in rows)

    def line(group: str, cid: str, iid: str, host: str, client: str, n: object) -> str:
        mid = f"{iid:<{i}} " if with_instance else ""
        return f"{group:<{g}} {cid:<{c}} {mid}{host:<{h}} {client:<{cl}} {str(n):<15} "
    head = line("GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS")
    out = ["", head + ("ASSIGNMENT" if verbose else "")]
    for r in rows:
        text = line(r.group, r.consumer_id, r.instance_id, r.host, r.client_id,
                    len(r.assignment))
        if verbose:
            text += format_assignment(r.assignment)
        out.append(text)
    return out


def format_assignment(assignment: tuple[TP, ...] | list[TP]) -> str:
    if not assignment:
        return MISSING
    by_topic: dict[str, list[int]] = {}
    for topic, p in assignment:
        by_topic.setdefault(topic, []).append(p)
    # Kafka sorts the partition numbers as strings, then the "(..)" groups
    return ", ".join(sorted("(" + ",".join(sorted(str(p) for p in ps)) + ")"
                            for ps in by_topic.values()))


def format_state(group: str, coordinator: str, strategy: str, state: str,
                 members: int) -> list[str]:
    """"\\n%-Ws %-25s %-20s %-15s %s" with W = max(25, len(coordinator))."""
    w = max(25, len(coordinator))

    def line(*v: object) -> str:
        s = [str(x) for x in v]
        return f"{s[0]:<{w}} {s[1]:<25} {s[2]:<20} {s[3]:<15} {s[4]}"
    return ["", line("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"),
            line(group, coordinator, strategy, state, members)]


def format_reset_plan(plan: dict[str, dict[TP, int]]) -> list[str]:
    """"%-30s %-30s %-10s %-15s" (Kafka prints no header when no group has a plan)."""
    if not any(plan.values()):
        return []
    fmt = "{:<30} {:<30} {:<10} {:<15}"
    out = ["", fmt.format("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET")]
    for group in sorted(plan):
        for (topic, p), off in sorted(plan[group].items()):
            out.append(fmt.format(group, topic, p, off))
    return out


def format_delete_offsets(results: dict[TP, int]) -> list[str]:
    """"%-30s %-15s %-15s": TOPIC, PARTITION, STATUS (Successful / Error: :<reason>)."""
    fmt = "{:<30} {:<15} {:<15}"
    out = ["", fmt.format("TOPIC", "PARTITION", "STATUS")]
    for (topic, p), code in sorted(results.items(), key=lambda kv: f"{kv[0][0]}{kv[0][1]}"):
        status = "Successful" if code == 0 else f"Error: :{error_text(code)}"
        out.append(fmt.format(topic, p if p >= 0 else "Not Provided", status))
    return out


def error_text(code: int) -> str:
    err = ErrorCode.from_code(code)
    return f"{err.name}: {err.message}"


def clamp(offset: int, start: int | None, end: int | None) -> int:
    """Kafka's checkOffsetsRange: above the log end -> end; below the start -> start."""
    if end is not None and offset > end:
        return end
    if start is not None and offset < start:
        return start
    return offset


def offset_rows(d: GroupDescription, committed: dict[TP, int],
                log_end: dict[TP, int | None]) -> list[OffsetRow]:
    """Kafka's collectGroupsOffsets: members with partitions (most partitions first), then
    committed partitions no member holds, with '-' for consumer, host and client."""
    rows: list[OffsetRow] = []
    assigned: set[TP] = set()
    members = [(m, decode_assignment(m.member_assignment)) for m in d.members]
    members = [(m, a) for m, a in members if a]
    for m, assignment in sorted(members, key=lambda ma: -len(ma[1])):
        for tp in sorted(assignment, key=lambda tp: (tp[1], tp[0])):
            assigned.add(tp)
            rows.append(OffsetRow(d.group, tp[0], tp[1], committed.get(tp), log_end.get(tp),
                                  m.member_id, m.client_host, m.client_id))
    for tp in sorted(set(committed) - assigned, key=lambda tp: (tp[1], tp[0])):
        rows.append(OffsetRow(d.group, tp[0], tp[1], committed[tp], log_end.get(tp)))
    return rows


# -- printing -------------------------------------------------------------------------------

class Printer:
    def __init__(self, out: IO[str], err: IO[str]) -> None:
        self.out, self.err, self.failed = out, err, False

    def lines(self, lines: list[str]) -> None:
        if lines:
            self.out.write("\n".join(lines) + "\n")

    def error(self, message: str) -> None:
        """Kafka's printError: a blank line, then ``Error: ..`` on stdout."""
        self.out.write(f"\nError: {message}\n")
        self.failed = True
