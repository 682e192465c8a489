"""The lobby's list of tables, numbered so a person can say ``join 2``, each with a short id
(the start of its table id) that stays the same however the list moves: ``join k3vq7a``.

>>> short_ids(["abcdefgh23", "abcdefzz45", "qrstuvwx67"])
['abcdefg', 'abcdefz', 'qrstuv']
"""

from __future__ import annotations

from collections.abc import Sequence

from prompt_toolkit.formatted_text import StyleAndTextTuples

from rami.v1 import game_pb2, lobby_service_pb2

from .convert import variant_id
from .safetext import safe

__all__ = ["SHORT_ID", "STATUS_WORDS", "joinable", "short_ids", "table_list_lines", "table_summary"]

#: The fewest characters of a table id the list shows (more when two listed ids share them).
SHORT_ID = 6

STATUS_WORDS = {
    lobby_service_pb2.TABLE_STATUS_WAITING: "waiting",
    lobby_service_pb2.TABLE_STATUS_PLAYING: "playing",
    lobby_service_pb2.TABLE_STATUS_FINISHED: "finished",
    lobby_service_pb2.TABLE_STATUS_CLOSED: "closed",
}


def joinable(table: lobby_service_pb2.TableInfo) -> bool:
    """True when the table waits for players and has a free seat."""
    return table.status == lobby_service_pb2.TABLE_STATUS_WAITING and any(
        s.kind == game_pb2.SEAT_KIND_EMPTY for s in table.seats
    )


def short_ids(ids: Sequence[str]) -> list[str]:
    """Each id's shortest start, of at least :data:`SHORT_ID` characters, that no other id in
    ``ids`` shares."""
    out = []
    for i, table_id in enumerate(ids):
        others = [o for j, o in enumerate(ids) if j != i and o != table_id]
        n = SHORT_ID
        while n < len(table_id) and any(o.startswith(table_id[:n]) for o in others):
            n += 1
        out.append(table_id[:n])
    return out


def table_summary(table: lobby_service_pb2.TableInfo) -> str:
    """One line of words: name, game, seats taken and who sits."""
    taken = [s for s in table.seats if s.kind != game_pb2.SEAT_KIND_EMPTY]
    who = ", ".join(safe(s.name, 24) for s in taken) or "nobody yet"
    return (
        f"{safe(table.name, 40)}: {variant_id(table.variant)}, "
        f"{len(taken)}/{len(table.seats)} seated ({who})"
    )


def table_list_lines(
    tables: Sequence[lobby_service_pb2.TableInfo], others: bool = False
) -> list[StyleAndTextTuples]:
    """The tables, numbered from 1, with their short ids and status; ``others``: the server
    has tables not listed (games over)."""
    if not tables:
        none = "No open tables" if others else "No tables yet"
        return [[("class:dim", f"{none}: create tallage bots=3 starts one with bots.")]]
    lines: list[StyleAndTextTuples] = []
    shorts = short_ids([t.table_id for t in tables])
    for i, (t, short) in enumerate(zip(tables, shorts, strict=True), 1):
        status = STATUS_WORDS.get(t.status, "?")
        style = "class:good" if joinable(t) else "class:dim"
        lines.append(
            [
                ("class:label", f"{i:>3}  "),
                ("", f"{safe(short, 32)}  "),
                (style, f"{status:<8}  "),
                ("", table_summary(t)),
            ]
        )
    lines.append(
        [
            (
                "class:dim",
                "join N or join ID takes a seat at a table (ID: its short id, which stays the "
                "same as the list changes); watch N or watch ID follows it.",
            )
        ]
    )
    return lines
