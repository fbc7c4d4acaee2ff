"""Output of ``pybroker consumer-groups`` (pure: no sockets, no event loop).

Kafka's ConsumerGroupCommand prints with printf formats; each formatter quotes
the one it follows (Kafka 4.0's, which describes classic and KIP-848 consumer
groups alike: --list --type adds a TYPE column; --describe --members --verbose
shows each member's epoch, current and target assignment ("t:0,1;u:2") and,
while a group mixes protocols (migration), whether each member is upgraded;
--describe --state --verbose the group epoch and target assignment epoch; facts
a classic group has not got print as "-"). Also here: the ConsumerProtocol
assignment decoder, the described group and the rows built from it for
--describe, the offset clamp of --reset-offsets and the Printer the actions
write through. tools/consumer_groups.py re-exports every name.
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
    """A described group of either kind (client.consumer_group_admin's
    ConsumerGroupDescription, with its coordinator)."""
    group: str
    state: str
    group_type: str                         # "classic" / "consumer"
    protocol: str                           # the assignor ("" when none)
    coordinator: tuple[int, str, int]       # node id, host, port
    members: list[Any]                      # MemberDescription: .assignment etc.
    group_epoch: int | None = None          # consumer groups only
    assignment_epoch: int | None = None


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
    leader_epoch: int | None = None   # of the commit (--verbose); None: none known

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
    target_assignment: tuple[TP, ...] = ()
    current_epoch: int | None = None        # the member epoch (consumer groups)
    target_epoch: int | None = None         # the group's target assignment epoch
    upgraded: bool | None = None            # None: unknown / a classic group


def _s(v: object) -> str:
    return MISSING if v is None else str(v)


def format_offsets(rows: list[OffsetRow], verbose: bool = False) -> list[str]:
    """"\\n%-Gs %-Ts %-10s %-15s %-15s %-15s %-Cs %-Hs %s" per line (widths >= 15);
    verbose adds LEADER-EPOCH (of the commit) after PARTITION, "%-15s"."""
    g = max([15] + [len(r.group) for r in rows])
    t = max([15] + [len(_s(r.topic)) for r in rows])
    c = max([15] + [len(r.consumer_id) for r in rows])
    h = max([15] + [len(r.host) for r in rows])

    def line(group: str, topic: str, partition: str, epoch: str, *rest: str) -> str:
        v = [group, topic, partition, *rest]
        mid = f"{epoch:<15} " if verbose else ""
        return (f"{v[0]:<{g}} {v[1]:<{t}} {v[2]:<10} {mid}{v[3]:<15} {v[4]:<15} {v[5]:<15} "
                f"{v[6]:<{c}} {v[7]:<{h}} {v[8]}")
    out = ["", line("GROUP", "TOPIC", "PARTITION", "LEADER-EPOCH", "CURRENT-OFFSET",
                    "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID")]
    out += [line(r.group, _s(r.topic), _s(r.partition), _s(r.leader_epoch), _s(r.offset),
                 _s(r.log_end), _s(r.lag), r.consumer_id, r.host, r.client_id) for r in rows]
    return out


def format_members(rows: list[MemberRow], verbose: bool) -> list[str]:
    """"%-Gs %-Cs [%-Is] %-Hs %-Ls %-15s " [+ verbose "%-15s %-As %-15s %-Ts[ %s]":
    CURRENT-EPOCH, CURRENT-ASSIGNMENT, TARGET-EPOCH, TARGET-ASSIGNMENT (widths >= 20)
    and UPGRADED only while classic and consumer members share the group]."""
    g = max([15] + [len(r.group) for r in rows])
    c = max([15] + [len(r.consumer_id) for r in rows])
    i = max([17] + [len(r.instance_id) for r in rows])
    h = max([15] + [len(r.host) for r in rows])
    cl = max([15] + [len(r.client_id) for r in rows])
    with_instance = any(r.instance_id for r in rows)
    current = [format_assignment(r.assignment) for r in rows]
    target = [format_assignment(r.target_assignment) for r in rows]
    a = max([20] + [len(x) for x in current])
    t = max([20] + [len(x) for x in target])
    upgrade = (any(r.upgraded is False for r in rows) and any(r.upgraded for r in rows))

    def line(group: str, cid: str, iid: str, host: str, client: str, n: object) -> str:
        mid = f"{iid:<{i}} " if with_instance else ""
        return f"{group:<{g}} {cid:<{c}} {mid}{host:<{h}} {client:<{cl}} {str(n):<15} "

    def tail(*v: object) -> str:
        s = [str(x) for x in v]
        text = f"{s[0]:<15} {s[1]:<{a}} {s[2]:<15} {s[3]:<{t}}"
        return text + f" {s[4]}" if upgrade else text
    head = line("GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS")
    if verbose:
        head += tail("CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT",
                     "UPGRADED")
    out = ["", head]
    for r, cur, tgt in zip(rows, current, target):
        text = line(r.group, r.consumer_id, r.instance_id, r.host, r.client_id,
                    len(r.assignment))
        if verbose:
            text += tail(_s(r.current_epoch), cur, _s(r.target_epoch), tgt,
                         MISSING if r.upgraded is None else str(r.upgraded).lower())
        out.append(text)
    return out


def format_assignment(assignment: tuple[TP, ...] | list[TP]) -> str:
    """Kafka 4.0's getAssignmentString: "t:0,1;u:2" (partitions in number order,
    the "topic:..." parts sorted); none -> "-"."""
    if not assignment:
        return MISSING
    by_topic: dict[str, list[int]] = {}
    for topic, p in assignment:
        by_topic.setdefault(topic, []).append(p)
    return ";".join(sorted(f"{topic}:" + ",".join(str(p) for p in sorted(ps))
                           for topic, ps in by_topic.items()))


def format_state(group: str, coordinator: str, strategy: str, state: str, members: int, *,
                 verbose: bool = False, group_epoch: int | None = None,
                 assignment_epoch: int | None = None) -> list[str]:
    """"\n%-Gs %-Cs %-20s %-20s %s" (G >= 15, C >= 25); verbose
    "\n%-Gs %-Cs %-20s %-20s %-15s %-25s %s" with GROUP-EPOCH and
    TARGET-ASSIGNMENT-EPOCH ("-" for a classic group, and for no assignor)."""
    g = max(15, len(group))
    w = max(25, len(coordinator))

    def line(*v: object) -> str:
        s = [str(x) for x in v]
        if verbose:
            return (f"{s[0]:<{g}} {s[1]:<{w}} {s[2]:<20} {s[3]:<20} {s[4]:<15} {s[5]:<25} "
                    f"{s[6]}")
        return f"{s[0]:<{g}} {s[1]:<{w}} {s[2]:<20} {s[3]:<20} {s[4]}"
    strategy = strategy or MISSING
    if verbose:
        return ["", line("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE",
                         "GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH", "#MEMBERS"),
                line(group, coordinator, strategy, state, _s(group_epoch),
                     _s(assignment_epoch), members)]
    return ["", line("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"),
            line(group, coordinator, strategy, state, members)]


def format_listing(rows: list[tuple[str, str, str]], with_type: bool,
                   with_state: bool) -> list[str]:
    """--list with --type and/or --state: "%-Ws[ %-20s][ %-20s]" with W = the
    longest id (>= 15) + 10; rows are (group, type, state)."""
    width = max([15] + [len(g) for g, _, _ in rows]) + 10

    def line(group: str, type_: str, state: str) -> str:
        text = f"{group:<{width}}"
        text += f" {type_:<20}" if with_type else ""
        return text + (f" {state:<20}" if with_state else "")
    return [line("GROUP", "TYPE", "STATE")] + [line(*r) for r in rows]


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
                log_end: dict[TP, int | None],
                leader_epochs: dict[TP, int] | None = None) -> list[OffsetRow]:
    """Kafka's collectGroupsOffsets: members with partitions (most partitions first), then
    committed partitions no member holds, with '-' for consumer, host and client; each
    member's rows, and the unassigned ones, by topic then partition (Kafka 4.0). A
    member's partitions are its current assignment (for a consumer group too: what it
    owns now, not its target). ``leader_epochs``: of the commits, -1 = none known."""
    epochs = leader_epochs or {}

    def epoch(tp: TP) -> int | None:
        e = epochs.get(tp, -1)
        return None if e < 0 else e
    rows: list[OffsetRow] = []
    assigned: set[TP] = set()
    members = [m for m in d.members if m.assignment]
    for m in sorted(members, key=lambda m: -len(m.assignment)):
        for tp in sorted(m.assignment):
            assigned.add(tp)
            rows.append(OffsetRow(d.group, tp[0], tp[1], committed.get(tp), log_end.get(tp),
                                  m.member_id, m.host, m.client_id, epoch(tp)))
    for tp in sorted(set(committed) - assigned):
        rows.append(OffsetRow(d.group, tp[0], tp[1], committed[tp], log_end.get(tp),
                              leader_epoch=epoch(tp)))
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
