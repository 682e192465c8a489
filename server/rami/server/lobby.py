"""The lobby: every table of this server, created, found, restored after a restart."""

from __future__ import annotations

import base64
import hmac
import logging
import secrets
from collections import OrderedDict
from dataclasses import dataclass

from rami.engine import Card, Options, get_variant
from rami.engine.cards import full_deck

from .errors import Exhausted, Invalid, NotFound, PermissionDenied, log_unexpected
from .limits import TimeBudget
from .sanitize import MAX_TABLE_NAME, clean_text
from .storage import Storage
from .table import Table, TableConfig
from .tablestate import FINISHED, TableSpec, TableState, hash_token, load_state

__all__ = ["Lobby", "LobbyConfig"]

log = logging.getLogger("rami.server.lobby")


@dataclass(frozen=True, slots=True)
class LobbyConfig:
    """Server-wide settings for tables."""

    allow_stacked_decks: bool = False
    turn_seconds: int = 0
    max_tables_per_client: int = 20
    finished_kept: int = 500
    #: Commands (Act) per second one seat may send, and the burst it may save up.
    commands_per_second: float = 20.0
    command_burst: float = 40.0
    #: Chat lines per second one seat may send, and the burst.
    chat_per_second: float = 1.0
    chat_burst: float = 5.0
    #: Open watch streams per seat, and spectator streams per client address.
    streams_per_seat: int = 4
    spectator_streams_per_client: int = 64
    #: Server time one client address may spend in hand analyses and game records: this share
    #: of every second, and the seconds it may save up.
    work_share: float = 0.2
    work_burst: float = 1.0


def new_table_id() -> str:
    """A table id unique across servers: 80 random bits, 16 lowercase base32 characters."""
    return base64.b32encode(secrets.token_bytes(10)).decode().lower()


class Lobby:
    """The tables of one server process."""

    def __init__(self, storage: Storage, config: LobbyConfig, table_config: TableConfig) -> None:
        self.storage = storage
        self.config = config
        self.table_config = table_config
        self.tables: dict[str, Table] = {}
        self._finished: OrderedDict[str, None] = OrderedDict()
        #: Server time spent on each client's analyses and records (shared by every service).
        self.work = TimeBudget(config.work_share, config.work_burst)

    def restore(self) -> int:
        """Rebuild every unfinished table from its stored log; returns how many."""
        count = 0
        for stored in self.storage.load():
            try:
                state = load_state(stored.table_id, stored.spec, stored.entries)
            except Exception as e:
                log_unexpected(log, f"table {stored.table_id} could not be rebuilt; left out", e)
                continue
            table = Table(state, self.storage, self.table_config, entries=stored.entries)
            self.tables[stored.table_id] = table
            table._clock()
            table._schedule()
            count += 1
        return count

    def create(
        self,
        *,
        name: str,
        variant: str,
        options: Options,
        private: bool,
        hand_analysis: bool,
        decks: list[list[Card]],
        client: str,
    ) -> tuple[Table, str]:
        """A new table and its owner's token."""
        get_variant(variant)
        active = sum(
            1
            for t in self.tables.values()
            if t.state.spec.client == client and t.state.status != FINISHED
        )
        if active >= self.config.max_tables_per_client:
            raise Exhausted(
                "TOO_MANY_TABLES",
                f"a client may have at most {self.config.max_tables_per_client} unfinished tables",
            )
        if decks and not self.config.allow_stacked_decks:
            raise PermissionDenied("STACKED_DECKS_OFF", "this server does not allow stacked decks")
        v = get_variant(variant)
        for d in decks:
            if sorted(d) != sorted(full_deck(v.decks, v.jokers)):
                raise Invalid(
                    "BAD_DECK",
                    f"a stacked deck must hold exactly the {v.deck_size} cards of {variant}",
                )
        if options.turn_seconds == 0 and self.config.turn_seconds:
            options = options.with_(turn_seconds=self.config.turn_seconds)
        table_name = clean_text(name, MAX_TABLE_NAME) or f"{variant} table"
        owner = secrets.token_urlsafe(24)
        spec = TableSpec(
            table_name,
            variant,
            options.to_dict(),
            private,
            hand_analysis,
            hash_token(owner),
            tuple(tuple(c.code() for c in d) for d in decks),
            client,
        )
        table_id = new_table_id()
        self.storage.create_table(table_id, spec.to_dict())
        table = Table(TableState(table_id, spec), self.storage, self.table_config)
        self.tables[table_id] = table
        return table, owner

    def get(self, table_id: str) -> Table:
        """The table of an id (a finished one is loaded from storage), or NOT_FOUND."""
        table = self.tables.get(table_id)
        if table is not None:
            return table
        stored = self.storage.load_table(table_id) if len(table_id) <= 64 else None
        if stored is None:
            raise NotFound("NO_SUCH_TABLE", f"no table {table_id!r}")
        state = load_state(stored.table_id, stored.spec, stored.entries)
        table = Table(state, self.storage, self.table_config, entries=stored.entries)
        self.tables[table_id] = table
        self.finished(table)
        return table

    def holds_token(self, token: str) -> bool:
        """True when ``token`` proves a seat or a table's ownership at any table in memory:
        a refusal then says "not yours" (PERMISSION_DENIED) rather than "nobody"
        (UNAUTHENTICATED)."""
        digest = hash_token(token)
        for t in self.tables.values():
            hashes = [t.state.spec.owner_hash, *(s.token_hash for s in t.state.seats)]
            if any(h and hmac.compare_digest(h, digest) for h in hashes):
                return True
        return False

    def finished(self, table: Table) -> None:
        """Keep only the most recent finished tables in memory (the rest reload on demand)."""
        if table.state.status != FINISHED:
            return
        self._finished[table.table_id] = None
        self._finished.move_to_end(table.table_id)
        while len(self._finished) > self.config.finished_kept:
            old, _ = self._finished.popitem(last=False)
            t = self.tables.get(old)
            if t is not None and not t.watchers:
                del self.tables[old]

    def close(self) -> None:
        """Stop every table's automatic moves and streams."""
        for t in self.tables.values():
            t.close()
