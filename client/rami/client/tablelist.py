"""The lobby's list of tables, numbered so a person can say ``join 2``."""

from __future__ import annotations

from collections.abc import Sequence

from prompt_toolkit.formatted_text import StyleAndTextTuples

from rami.v1 import game_pb2, lobby_service_pb2

from .convert import variant_id
from .safetext import safe

__all__ = ["STATUS_WORDS", "joinable", "table_list_lines", "table_summary"]

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


def table_summary(table: lobby_service_pb2.TableInfo) -> str:
    """One line of words: name, game, seats taken and who sits."""
    taken = [s for s in table.seats if s.kind != game_pb2.SEAT_KIND_EMPTY]
    who = ", ".join(safe(s.name, 24) for s in taken) or "nobody yet"
    return (
        f"{safe(table.name, 40)}: {variant_id(table.variant)}, "
        f"{len(taken)}/{len(table.seats)} seated ({who})"
    )


def table_list_lines(tables: Sequence[lobby_service_pb2.TableInfo]) -> list[StyleAndTextTuples]:
    """The tables, numbered from 1, with their ids and status."""
    if not tables:
        return [[("class:dim", "No tables yet: create tallage bots=3 starts one with bots.")]]
    lines: list[StyleAndTextTuples] = []
    for i, t in enumerate(tables, 1):
        status = STATUS_WORDS.get(t.status, "?")
        style = "class:good" if joinable(t) else "class:dim"
        lines.append(
            [
                ("class:label", f"{i:>3}  "),
                ("", f"{safe(t.table_id, 32)}  "),
                (style, f"{status:<8}  "),
                ("", table_summary(t)),
            ]
        )
    lines.append([("class:dim", "join N takes a seat at table N; watch N follows it.")])
    return lines
