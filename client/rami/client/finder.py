"""The table a person means: a number of the list they last saw, a short id, or a whole id.

Numbers count in the list as printed, which the server's may have changed since: a number
whose table moved is not taken for another table (said, with the list printed again). A short
id is any start of a table's id that no other listed table shares (``tablelist.short_ids``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection

import grpc

from rami.v1 import lobby_service_pb2

from .link import Link, Refused
from .printer import Printer
from .safetext import safe
from .tablelist import SHORT_ID, table_list_lines

__all__ = ["TableFinder"]

TableInfo = lobby_service_pb2.TableInfo

#: The states of a table whose game is not over: always listed.
_OPEN = (lobby_service_pb2.TABLE_STATUS_WAITING, lobby_service_pb2.TABLE_STATUS_PLAYING)


class TableFinder:
    """The tables as the person last saw them listed, and the table a reference typed means."""

    def __init__(
        self, link: Link, out: Printer, held: Callable[[], Collection[str]] = frozenset
    ) -> None:
        self.link = link
        self.out = out
        #: The ids of the tables where the person holds a seat (listed, whatever their state).
        self.held = held
        #: The list as last printed: ``join 2`` means its second table.
        self.seen: list[TableInfo] = []
        #: Whether a list was printed (one with no table is a list all the same).
        self.printed = False
        #: The tables the server has that the list printed left out (games over).
        self.unlisted = 0
        #: Said after every list printed, with the list (the seats held at its tables).
        self.after_print: Callable[[list[TableInfo]], Awaitable[None]] | None = None
        #: Whether it listed the tables whose game is over too (``tables all``).
        self.everything = False

    async def listed(self) -> list[TableInfo]:
        """The server's list now, every table (not printed, and not taken as the list
        seen)."""
        response = await self.link.call(
            self.link.lobby.ListTables, lobby_service_pb2.ListTablesRequest()
        )
        return list(response.tables)

    def _shown(self, every: list[TableInfo], also: Collection[str] = ()) -> list[TableInfo]:
        """What of ``every`` the list shows: all of it after ``tables all``; else the open
        tables, those where the person holds a seat, and those of ``also``."""
        if self.everything:
            return every
        held = self.held()
        return [t for t in every if t.status in _OPEN or t.table_id in held or t.table_id in also]

    async def show(self, everything: bool = False) -> list[TableInfo]:
        """The server's list, printed: the numbers typed from now on count in it. Without
        ``everything``, the tables whose game is over (finished, closed) are counted, not
        listed, but for those where the person holds a seat."""
        self.everything = everything
        every = await self.listed()
        await self._print(every, self._shown(every))
        return self.seen

    async def _print(self, every: list[TableInfo], shown: list[TableInfo]) -> None:
        """Print ``shown`` (of the server's ``every``) as the list seen from now on, how many
        it leaves out, and what :attr:`after_print` says of it."""
        self.seen = shown
        self.printed = True
        left = self.unlisted = len(every) - len(shown)
        self.out.lines(table_list_lines(shown, others=left > 0))
        if left:
            self.out.info(
                f"{left} table{' whose game is' if left == 1 else 's whose games are'} over "
                f"{'is' if left == 1 else 'are'} not listed: tables all lists "
                f"{'it' if left == 1 else 'them'}."
            )
        if self.after_print is not None:
            await self.after_print(shown)

    async def resolve(self, ref: str) -> TableInfo | None:
        """The table ``ref`` means: its number in the list as printed, its short id, or its
        whole id. None when the list has changed under the number (said, and the list printed
        again)."""
        if ref.isdigit() and len(ref) < SHORT_ID:
            return await self._numbered(int(ref))
        request = lobby_service_pb2.GetTableRequest(table_id=ref)
        try:
            response = await self.link.call(self.link.lobby.GetTable, request)
        except Refused as e:
            if e.code != grpc.StatusCode.NOT_FOUND:
                raise
            fits = [t for t in await self.listed() if t.table_id.startswith(ref.lower())]
            if len(fits) > 1:
                ids = ", ".join(safe(t.table_id, 32) for t in fits)
                raise ValueError(
                    f"{ref!r} starts more than one table id ({ids}): type more of it"
                ) from None
            if not fits:
                raise
            return fits[0]
        table: TableInfo = response.table
        return table

    async def _numbered(self, number: int) -> TableInfo | None:
        """Table ``number`` of the list as printed, if the server's list still has it there."""
        if not self.printed and not self.seen:
            raise ValueError(
                f"there is no list to count {number} in yet: tables lists the tables, then "
                "join N or join ID"
            )
        if not self.seen:
            raise ValueError(
                "the list you saw has no table: "
                + (
                    "tables all lists those whose games are over"
                    if self.unlisted
                    else "create makes one, tables lists them anew"
                )
            )
        if not 1 <= number <= len(self.seen):
            has = "only table 1" if len(self.seen) == 1 else f"tables 1 to {len(self.seen)}"
            raise ValueError(f"the list you saw has {has}: tables lists them anew")
        seen = self.seen[number - 1]
        # A table listed is counted as before when its game has ended since (its place may
        # still change: the server lists the tables whose game is over last).
        every = await self.listed()
        fresh = self._shown(every, {t.table_id for t in self.seen})
        if number <= len(fresh) and fresh[number - 1].table_id == seen.table_id:
            return fresh[number - 1]
        now = (
            f"number {number} is now {safe(fresh[number - 1].name, 40)}"
            if number <= len(fresh)
            else f"there is no number {number} now"
        )
        where = [i for i, t in enumerate(fresh, 1) if t.table_id == seen.table_id]
        then = (
            f"{safe(seen.name, 40)}, which you saw there, is number {where[0]}"
            if where
            else f"{safe(seen.name, 40)}, which you saw there, is no longer listed"
        )
        self.out.error(
            f"The tables have changed since the list you saw: {now}, and {then}. Nothing was "
            "done; here is the list again (a short id, join ID, stays the same)."
        )
        await self._print(every, fresh)
        return None
