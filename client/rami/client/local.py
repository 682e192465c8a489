"""``rami-client play``: a server in this process, on this event loop, and a table with bots.

The server listens on 127.0.0.1 on a free port and keeps nothing (``:memory:``); the client
talks to it over gRPC exactly as it would to a remote one, so ``play`` is ``connect`` with the
table already made.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from rami.server.app import serve
from rami.server.lobby import LobbyConfig
from rami.server.table import TableConfig

__all__ = ["PLAY_TABLES", "local_server"]

#: Pauses that let a person follow the bots: a bot's move, and the score table between rounds.
PLAY_TABLES = TableConfig(bot_delay=0.7, round_pause=5.0)


@asynccontextmanager
async def local_server(
    table_config: TableConfig = PLAY_TABLES, lobby_config: LobbyConfig | None = None
) -> AsyncIterator[str]:
    """A server on 127.0.0.1 for as long as the block runs; yields its address."""
    # The server's own log would print over the game; its errors still show. (Put back as it
    # was once the server ends: the process may go on, a test suite's for instance.)
    log = logging.getLogger("rami.server")
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        server = await serve(
            "127.0.0.1",
            0,
            ":memory:",
            lobby_config=lobby_config or LobbyConfig(),
            table_config=table_config,
        )
        try:
            yield f"127.0.0.1:{server.port}"
        finally:
            await server.stop(0.5)
    finally:
        log.setLevel(level)
