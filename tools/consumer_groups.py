"""``pybroker consumer-groups``: Kafka's kafka-consumer-groups, over the Kafka protocol.

    pybroker consumer-groups --bootstrap-server HOST:PORT --list [--state [S,S]] [--type [T,T]]
    pybroker consumer-groups --bootstrap-server HOST:PORT --describe (--group G | --all-groups)
        [--offsets | --members | --state] [--verbose]
    pybroker consumer-groups --bootstrap-server HOST:PORT --reset-offsets --group G
        (--topic T[:P,P] ... | --all-topics)
        (--to-earliest | --to-latest | --to-current | --to-offset N | --shift-by N
         | --to-datetime YYYY-MM-DDTHH:mm:SS.sss[Z|+hh:mm] | --by-duration PnDTnHnMnS)
        (--dry-run | --execute)
    pybroker consumer-groups --bootstrap-server HOST:PORT --delete (--group G ... | --all-groups)
    pybroker consumer-groups --bootstrap-server HOST:PORT --delete-offsets --group G --topic T[:P,P]

Output follows Kafka 4.0's ConsumerGroupCommand column for column (its printf formats are
quoted beside each formatter, in consumer_groups_format.py), for both kinds of group:
classic ones and KIP-848 consumer groups (``--list --type``: the TYPE column and filter;
``--members --verbose``: member epochs, current and target assignments; ``--state
--verbose``: group and target assignment epochs). Where that tool prints
``Error: ...`` and still exits 0, this one exits 1, so scripts can tell.

How each action talks to the cluster (what Kafka's AdminClient does):
1. ``--list``: ListGroups (v5: TypesFilter) to every broker (each lists the groups it
   coordinates).
2. ``--describe``: FindCoordinator, then ConsumerGroupDescribe (a classic group or none:
   GROUP_ID_NOT_FOUND, then DescribeGroups) and OffsetFetch (all partitions) at the
   coordinator; log-end offsets by ListOffsets(latest) at each partition's leader. A
   classic member's assignment is ConsumerProtocol Assignment bytes (``decode_assignment``);
   a consumer group's comes as topic ids with names.
3. ``--reset-offsets``: only when the group is Empty or Dead (either kind); offsets are computed
   from ListOffsets (earliest / latest / by timestamp) or the committed ones, clamped into
   [log start, log end] as Kafka does, then written by a standalone OffsetCommit
   (generation -1, empty member id).
4. ``--delete``: DeleteGroups at each group's coordinator.  5. ``--delete-offsets``: OffsetDelete.
"""

from __future__ import annotations

import re
import time
from argparse import Namespace
from datetime import datetime, timedelta, timezone
from typing import IO

from client.group_admin import GroupAdmin
from tools import (ToolError, ToolParser, add_command_config, command_security,
                   parse_or_status, run, streams)
# output and row building live in consumer_groups_format; every name stays importable from here
from tools.consumer_groups_format import MISSING, TP, GroupDescription, MemberRow, \
    OffsetRow, Printer, clamp, decode_assignment, error_text, format_assignment, \
    format_delete_offsets, format_listing, format_members, format_offsets, \
    format_reset_plan, format_state, offset_rows
from protocol.errors import ErrorCode, KafkaError

ACTIONS = ("list", "describe", "reset_offsets", "delete", "delete_offsets")
SCENARIOS = ("to_earliest", "to_latest", "to_current", "to_offset", "shift_by", "to_datetime",
             "by_duration")
EARLIEST, LATEST = -2, -1  # ListOffsets timestamps
# Kafka's GroupState.groupStatesForType(CONSUMER): the classic and the consumer groups' states
STATES = {"preparingrebalance": "PreparingRebalance", "completingrebalance": "CompletingRebalance",
          "stable": "Stable", "dead": "Dead", "empty": "Empty", "assigning": "Assigning",
          "reconciling": "Reconciling"}
TYPES = {"classic": "Classic", "consumer": "Consumer"}
REBALANCING = ("PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling")


class ReportedError(Exception):
    """An ``Error: ...`` already printed (Kafka's printError); exit status 1."""


# -- arguments -------------------------------------------------------------------------------

def build_parser(out: IO[str] | None = None, err: IO[str] | None = None) -> ToolParser:
    p = ToolParser(prog="pybroker consumer-groups", out=out, err=err,
                   description="List all consumer groups, describe a consumer group, delete "
                               "consumer group info, or reset consumer group offsets.")
    p.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT[,HOST:PORT]")
    add_command_config(p)
    act = p.add_mutually_exclusive_group(required=True)
    for name in ("list", "describe", "reset-offsets", "delete", "delete-offsets"):
        act.add_argument(f"--{name}", action="store_true")
    p.add_argument("--group", action="append", default=[], help="a consumer group (repeatable)")
    p.add_argument("--all-groups", action="store_true")
    p.add_argument("--topic", action="append", default=[], metavar="T[:P,P]")
    p.add_argument("--all-topics", action="store_true")
    p.add_argument("--offsets", action="store_true", help="--describe: offsets and lag (default)")
    p.add_argument("--members", action="store_true", help="--describe: the members")
    p.add_argument("--verbose", action="store_true",
                   help="--describe: --members with epochs and assignments, --state with "
                        "the epochs, --offsets with the commits' leader epochs")
    p.add_argument("--state", nargs="?", const="", default=None, metavar="S[,S]",
                   help="--describe: the group state; --list: show/filter by state")
    p.add_argument("--type", nargs="?", const="", default=None, metavar="T[,T]",
                   help="--list: show/filter by group type (classic, consumer)")
    scen = p.add_mutually_exclusive_group()
    scen.add_argument("--to-earliest", action="store_true")
    scen.add_argument("--to-latest", action="store_true")
    scen.add_argument("--to-current", action="store_true")
    scen.add_argument("--to-offset", type=int, metavar="N")
    scen.add_argument("--shift-by", type=int, metavar="N")
    scen.add_argument("--to-datetime", metavar="YYYY-MM-DDTHH:mm:SS.sss")
    scen.add_argument("--by-duration", metavar="PnDTnHnMnS")
    run_mode = p.add_mutually_exclusive_group()
    run_mode.add_argument("--dry-run", action="store_true")
    run_mode.add_argument("--execute", action="store_true")
    p.add_argument("--timeout", type=int, default=30000, help="per-operation timeout, ms")
    return p


def parse_args(argv: list[str], out: IO[str] | None = None,
               err: IO[str] | None = None) -> Namespace:
    """Parse and check the combination of options (ToolError on a bad one)."""
    args = build_parser(out, err).parse_args(argv)
    args.action = next(a for a in ACTIONS if getattr(args, a))
    args.scenario = next((s for s in SCENARIOS if getattr(args, s) not in (None, False)), None)
    if args.action in ("describe", "reset_offsets", "delete") and not (args.group
                                                                       or args.all_groups):
        raise ToolError(f"Option [{flag(args.action)}] takes one of these options: "
                        "[all-groups], [group]")
    if args.action == "delete_offsets" and (len(args.group) != 1 or not args.topic):
        raise ToolError("Option [delete-offsets] takes the following options: [topic], [group]")
    if args.action == "reset_offsets":
        if args.topic and args.all_topics:
            raise ToolError("Option [reset-offsets] takes one of these options: [all-topics], "
                            "[topic]")
        if not (args.topic or args.all_topics):
            raise ToolError("One of the reset scopes should be defined: --all-topics, --topic.")
        if args.scenario is None:
            raise ToolError("Option [reset-offsets] requires one of the following scenarios: "
                            + ", ".join(f"[{s.replace('_', '-')}]" for s in SCENARIOS))
    elif args.scenario is not None or args.dry_run or args.execute:
        raise ToolError("Option [reset-offsets] scenarios, --dry-run and --execute only apply "
                        "to --reset-offsets")
    if args.action == "describe" and sum(map(bool, (args.offsets, args.members,
                                                    args.state is not None))) > 1:
        raise ToolError("Option [describe] takes at most one of these options: [members], "
                        "[offsets], [state]")
    args.topic_partitions = [parse_topic_arg(t) for t in args.topic]
    if args.to_datetime is not None:
        args.timestamp_ms = parse_datetime(args.to_datetime)
    if args.by_duration is not None:
        args.timestamp_ms = int(time.time() * 1000) - parse_duration_ms(args.by_duration)
    if args.type is not None and args.action != "list":
        raise ToolError("Option [type] can be used only with [list]")
    args.states = parse_states(args.state) if args.action == "list" and args.state else set()
    args.types = parse_types(args.type) if args.type else set()
    return args


def flag(action: str) -> str:
    return action.replace("_", "-")


def parse_topic_arg(text: str) -> tuple[str, list[int] | None]:
    """'t' -> ('t', None: every partition); 't:0,2' -> ('t', [0, 2])."""
    if ":" not in text:
        return text, None
    topic, _, parts = text.partition(":")
    try:
        partitions = [int(p) for p in parts.split(",")]
    except ValueError:
        raise ToolError(f"Invalid topic arg '{text}', expected topic name and partitions") \
            from None
    if not topic or not partitions:
        raise ToolError(f"Invalid topic arg '{text}', expected topic name and partitions")
    return topic, partitions


def parse_datetime(text: str) -> int:
    """Kafka's Utils.getDateTime: ISO 8601 with a 'T'; no zone means UTC. -> epoch ms."""
    if "T" not in text:
        raise ToolError("Error parsing timestamp. It does not contain a 'T' according to "
                        "ISO8601 format")
    try:
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ToolError(f"Error parsing timestamp {text!r}") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return int(dt.timestamp() * 1000)


_DURATION = re.compile(r"^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$")


def parse_duration_ms(text: str) -> int:
    """ISO 8601 duration as Java's Duration.parse takes it ('PT1H30M', 'P2DT3H')."""
    m = _DURATION.match(text.upper())
    if not m or text.upper() in ("P", "PT"):
        raise ToolError(f"Text cannot be parsed to a Duration: {text}")
    d, h, mi, s = (float(g) if g else 0.0 for g in m.groups())
    return int(timedelta(days=d, hours=h, minutes=mi, seconds=s).total_seconds() * 1000)


def parse_states(text: str) -> set[str]:
    out = set()
    for s in (x.strip() for x in text.split(",")):
        if s.lower() not in STATES:
            raise ToolError(f"Invalid state list '{text}'. Valid states are: "
                            + ", ".join(STATES.values()))
        out.add(STATES[s.lower()])
    return out


def parse_types(text: str) -> set[str]:
    """'classic,CONSUMER' -> {"classic", "consumer"} (the wire's GroupType)."""
    out = set()
    for t in (x.strip().lower() for x in text.split(",")):
        if t not in TYPES:
            raise ToolError(f"Invalid types list '{text}'. Valid types are: "
                            + ", ".join(TYPES.values()))
        out.add(t)
    return out


# -- the Kafka-protocol side ----------------------------------------------------------------

async def describe_group(ga: GroupAdmin, group: str) -> GroupDescription:
    """The group (either kind) at its coordinator, as the formatters take it."""
    g, coordinator = await ga.describe_group(group)
    return GroupDescription(group, g.state, g.group_type, g.assignor, coordinator,
                            list(g.members), g.group_epoch, g.assignment_epoch)


# -- actions --------------------------------------------------------------------------------

def check_state(pr: Printer, d: GroupDescription, rows: int) -> bool:
    """Kafka's shouldPrintMemberState: notes on stderr, an error for a Dead group."""
    if d.state == "Dead":
        pr.error(f"Consumer group '{d.group}' does not exist.")
        return False
    if d.state == "Empty":
        pr.err.write(f"\nConsumer group '{d.group}' has no active members.\n")
    elif d.state in REBALANCING:
        pr.err.write(f"\nWarning: Consumer group '{d.group}' is rebalancing.\n")
    return rows > 0


async def describe(ga: GroupAdmin, args: Namespace, pr: Printer) -> None:
    groups = [g for g, _ in await ga.list_groups(set())] if args.all_groups else args.group
    for group in sorted(set(groups)):
        d = await describe_group(ga, group)
        if args.members:
            rows = [MemberRow(group, m.member_id, m.instance_id or "", m.host, m.client_id,
                              m.assignment, m.target_assignment or (), m.member_epoch,
                              d.assignment_epoch, m.upgraded)
                    for m in d.members]
            check_state(pr, d, len(rows))
            if d.state != "Dead":   # Kafka prints the header even without members
                pr.lines(format_members(rows, args.verbose))
        elif args.state is not None:
            if check_state(pr, d, 1):
                node, host, port = d.coordinator
                pr.lines(format_state(group, f"{host}:{port}  ({node})", d.protocol, d.state,
                                      len(d.members), verbose=args.verbose,
                                      group_epoch=d.group_epoch,
                                      assignment_epoch=d.assignment_epoch))
        else:
            commits = await ga.committed_offsets(group)
            committed = {tp: c.offset for tp, c in commits.items()}
            assigned = {tp for m in d.members for tp in m.assignment}
            tps = sorted(assigned | set(committed))
            log_end = await ga.list_offsets(tps, LATEST)
            offsets = offset_rows(d, committed, log_end,
                                  {tp: c.leader_epoch for tp, c in commits.items()})
            if check_state(pr, d, len(offsets)):
                pr.lines(format_offsets(offsets, args.verbose))


async def list_groups(ga: GroupAdmin, args: Namespace, pr: Printer) -> None:
    groups = await ga.list_group_listings(args.states, args.types)
    if args.state is None and args.type is None:
        pr.lines([g.group_id for g in groups])
        return
    pr.lines(format_listing([(g.group_id, g.type_name, g.state or "Unknown") for g in groups],
                            with_type=args.type is not None, with_state=args.state is not None))


async def reset_scope(ga: GroupAdmin, args: Namespace, group: str) -> list[TP]:
    if args.all_topics:
        return sorted(await ga.committed(group))
    out: list[TP] = []
    whole = [t for t, parts in args.topic_partitions if parts is None]
    for t, parts in args.topic_partitions:
        out.extend((t, p) for p in parts or [])
    out.extend(await ga.partitions_of(whole) if whole else [])
    return sorted(set(out))


async def plan_reset(ga: GroupAdmin, args: Namespace, group: str, tps: list[TP],
                     pr: Printer) -> dict[TP, int]:
    """New offsets per partition for the chosen scenario (Kafka's prepareOffsetsToReset)."""
    s = args.scenario

    async def required(ts: int, what: str, among: list[TP] | None = None) -> dict[TP, int]:
        if among == []:
            return {}
        got = await ga.list_offsets(tps if among is None else among, ts)
        missing = [tp for tp, o in got.items() if o is None]
        if missing:
            raise ToolError(f"Error getting {what} offset of topic partition: "
                            f"{missing[0][0]}-{missing[0][1]}")
        return {tp: o for tp, o in got.items() if o is not None}

    async def clamped(wanted: dict[TP, int]) -> dict[TP, int]:
        start = await ga.list_offsets(list(wanted), EARLIEST)
        end = await ga.list_offsets(list(wanted), LATEST)
        return {tp: clamp(o, start[tp], end[tp]) for tp, o in wanted.items()}

    if s == "to_earliest":
        return await required(EARLIEST, "starting")
    if s == "to_latest":
        return await required(LATEST, "ending")
    if s == "to_offset":
        return await clamped(dict.fromkeys(tps, args.to_offset))
    if s in ("shift_by", "to_current"):
        current = await ga.committed(group)
        if s == "shift_by":
            for tp in tps:
                if tp not in current:
                    raise ToolError(f"Cannot shift offset for partition {tp[0]}-{tp[1]} since "
                                    "there is no current committed offset")
            return await clamped({tp: current[tp] + args.shift_by for tp in tps})
        ends = await required(LATEST, "ending", [tp for tp in tps if tp not in current])
        return {tp: current[tp] if tp in current else ends[tp] for tp in tps}
    by_time = await ga.list_offsets(tps, args.timestamp_ms)
    empty = [tp for tp, o in by_time.items() if o is None]
    for t, p in empty:
        pr.out.write(f"\nWarn: Partition {p} from topic {t} is empty. Falling back to latest "
                     "known offset.\n")
    latest = await required(LATEST, "ending", empty)
    return {tp: (o if o is not None else latest[tp]) for tp, o in by_time.items()}


async def reset_offsets(ga: GroupAdmin, args: Namespace, pr: Printer) -> None:
    if not (args.dry_run or args.execute):
        pr.err.write("WARN: No action will be performed as the --execute option is missing. "
                     "You should add the --dry-run option explicitly if you are scripting this "
                     "command.\n")
    groups = [g for g, _ in await ga.list_groups(set())] if args.all_groups else args.group
    plan: dict[str, dict[TP, int]] = {}
    for group in groups:
        d = await describe_group(ga, group)
        if d.state not in ("Empty", "Dead"):
            pr.error(f"Assignments can only be reset if the group '{group}' is inactive, but "
                     f"the current state is {d.state}.")
            plan[group] = {}
            continue
        offsets = await plan_reset(ga, args, group, await reset_scope(ga, args, group), pr)
        if args.execute and offsets:
            errors = {tp: e for tp, e in (await ga.commit(group, offsets)).items() if e}
            if errors:
                (t, p), code = next(iter(errors.items()))
                raise ToolError(f"Error: Failed to commit offsets of group '{group}' "
                                f"({t}-{p}: {error_text(code)})")
        plan[group] = offsets
    pr.lines(format_reset_plan(plan))


async def delete_groups(ga: GroupAdmin, args: Namespace, pr: Printer) -> None:
    groups = [g for g, _ in await ga.list_groups(set())] if args.all_groups else args.group
    results = {g: await ga.delete_group(g) for g in groups}
    ok = [g for g, code in results.items() if code == 0]
    failed = {g: code for g, code in results.items() if code != 0}
    if not failed:
        pr.lines([f"Deletion of requested consumer groups ('{', '.join(ok)}') was successful."])
        return
    pr.error("Deletion of some consumer groups failed:")
    pr.lines([f"* Group '{g}' could not be deleted due to: {error_text(c)}"
              for g, c in failed.items()])
    if ok:
        pr.lines(["", f"These consumer groups were deleted successfully: '{', '.join(ok)}'"])


DELETE_OFFSETS_ERRORS = {
    ErrorCode.INVALID_GROUP_ID: "'{g}' is not valid.",
    ErrorCode.GROUP_ID_NOT_FOUND: "'{g}' does not exist.",
    ErrorCode.GROUP_AUTHORIZATION_FAILED: "Access to '{g}' is not authorized.",
    ErrorCode.NON_EMPTY_GROUP: "Deleting offsets of a consumer group '{g}' is forbidden if "
                               "the group is not empty.",
}


async def delete_offsets(ga: GroupAdmin, args: Namespace, pr: Printer) -> None:
    group = args.group[0]
    results: dict[TP, int] = {}
    tps: set[TP] = set()
    for t, parts in args.topic_partitions:
        if parts is not None:
            tps.update((t, p) for p in parts)
            continue
        try:
            tps.update(await ga.partitions_of([t]))
        except KafkaError as e:
            results[(t, -1)] = int(e.code)
    top, per = await ga.delete_offsets(group, sorted(tps)) if tps else (0, {})
    results.update(per)
    top = top or next((c for c in per.values() if c), 0)
    if top == 0:
        pr.lines([f"Request succeed for deleting offsets with topic {', '.join(args.topic)} "
                  f"group {group}"])
    elif top in DELETE_OFFSETS_ERRORS:
        pr.error(DELETE_OFFSETS_ERRORS[ErrorCode.from_code(top)].format(g=group))
    elif top in (ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC, ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                 ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
        pr.error("Encounter some partition level error, see the follow-up details:")
    else:
        pr.error(f"Encounter some unknown error: {ErrorCode.from_code(top).name}")
    pr.lines(format_delete_offsets(results))


HANDLERS = {"list": list_groups, "describe": describe, "reset_offsets": reset_offsets,
            "delete": delete_groups, "delete_offsets": delete_offsets}


async def execute(args: Namespace, out: IO[str], err: IO[str]) -> int:
    pr = Printer(out, err)
    ga = GroupAdmin(args.bootstrap_server, args.timeout, security=command_security(args))
    try:
        await HANDLERS[args.action](ga, args, pr)
    finally:
        await ga.close()
    return 1 if pr.failed else 0


def main(argv: list[str], *, stdin: IO[str] | None = None, stdout: IO[str] | None = None,
         stderr: IO[str] | None = None) -> int:
    _, out, err = streams(stdin, stdout, stderr)
    args = parse_or_status(parse_args, argv, out, err)
    if isinstance(args, int):
        return args
    return run(lambda: execute(args, out, err), out,
               "\nError: Executing consumer group command failed due to ")
