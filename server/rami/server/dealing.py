"""The server's secret, and what it makes: every table's fair deal and its bots' randomness.

The table store keeps nothing secret: a table's spec holds a random *nonce* and the public
*commitment* of its deal (``rami.engine.fair``). Its secret is made from the nonce and the
server's key, which lives in a file of its own (``--secret-file``, by default the database's
path plus ``.key``, created readable by its owner only; with PostgreSQL, where several servers
share the tables, ``--secret-file`` is required and every server is given the same key).
Whoever reads the database alone can therefore foresee neither the deal of a running game
nor a built-in bot's next choice.

Losing the key file loses the deals of the running games: they cannot be dealt on, and the
server leaves them out at its next start, saying why. Finished games keep their records.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import re
import secrets
import stat

from rami.engine.rng import derive_seed

__all__ = ["KEY_BYTES", "ServerKey", "ServerKeyError", "bot_seed", "deal_tip"]

log = logging.getLogger("rami.server.dealing")

#: The size of a new server key.
KEY_BYTES = 32


class ServerKeyError(OSError):
    """A key file that cannot be read or made."""


class ServerKey:
    """The server's secret key: table secrets are made from it and a table's nonce."""

    __slots__ = ("_key", "made", "source")

    def __init__(self, key: bytes, source: str = "memory", made: bool = False) -> None:
        if len(key) < KEY_BYTES:
            where = f"the server key {source}" if source != "memory" else "a server key"
            raise ServerKeyError(
                f"{where} is too short: at least {2 * KEY_BYTES} hex digits ({KEY_BYTES} bytes),"
                f" not {2 * len(key)}"
            )
        self._key = key
        #: Where the key comes from (a path, or "memory"), for the log.
        self.source = source
        #: True when its file was made by this load (it did not exist).
        self.made = made

    def __repr__(self) -> str:
        return f"ServerKey(source={self.source!r})"

    @classmethod
    def ephemeral(cls) -> ServerKey:
        """A key for a server that keeps nothing (``--db :memory:``)."""
        return cls(secrets.token_bytes(KEY_BYTES))

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> ServerKey:
        """The key in ``path``, made there first when the file does not exist (readable and
        writable by its owner only)."""
        p = os.path.expanduser(os.fspath(path))
        made = False
        try:
            fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass
        except OSError as e:
            raise ServerKeyError(f"cannot make the server key {p}: {e.strerror}") from None
        else:
            with os.fdopen(fd, "wb") as f:
                f.write(secrets.token_hex(KEY_BYTES).encode() + b"\n")
                f.flush()
                os.fsync(f.fileno())
            log.info("made a new server key in %s", p)
            made = True
        try:
            with open(p, "rb") as f:
                text = f.read().strip()
                mode = os.fstat(f.fileno()).st_mode
        except OSError as e:
            raise ServerKeyError(f"cannot read the server key {p}: {e.strerror}") from None
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            log.warning("the server key %s can be read by others: chmod 600 it", p)
        digits = re.sub(rb"\s", b"", text)
        if len(digits) % 2 and re.fullmatch(rb"[0-9a-fA-F]+", digits):
            raise ServerKeyError(
                f"the server key {p} holds an odd number of hex digits ({len(digits)}): two make"
                f" a byte, and a key is at least {2 * KEY_BYTES} hex digits (a server makes one:"
                f" {KEY_BYTES} random bytes in hex), on one line"
            )
        try:
            key = bytes.fromhex(text.decode("ascii"))
        except (UnicodeDecodeError, ValueError):
            raise ServerKeyError(
                f"the server key {p} is not hexadecimal: it holds at least {2 * KEY_BYTES} hex"
                f" digits (a server makes one: {KEY_BYTES} random bytes in hex), on one line"
            ) from None
        return cls(key, p, made)

    @classmethod
    def for_store(cls, db: str, secret_file: str | None = None) -> ServerKey:
        """The key that goes with the table store ``db``: ``secret_file`` when given, else
        ``db`` + ``.key``, or a key in memory for a store in memory. A PostgreSQL store has no
        path: its servers share the key ``secret_file`` names, which it must name."""
        if secret_file:
            return cls.load(secret_file)
        if db.startswith(("postgresql://", "postgres://")):
            # Every server on the database deals the same tables: they share one key, which
            # the database must not hold.
            raise ServerKeyError(
                "a PostgreSQL store needs --secret-file: the key file every server on that"
                " database shares (made there when missing)"
            )
        if db == ":memory:":
            return cls.ephemeral()
        return cls.load(db + ".key")

    def fingerprint(self) -> str:
        """What tells this key from another, and nothing of it (a storage shared by several
        servers keeps it, to refuse a server with another key: ``Storage.check_key``)."""
        return hmac.new(self._key, b"rami key fingerprint", hashlib.sha256).hexdigest()

    def token_key(self) -> bytes:
        """The key the tokens of request ids are made with (``retries.derived_token``)."""
        return hmac.new(self._key, b"rami request tokens", hashlib.sha256).digest()

    def table_secret(self, table_id: str, nonce: str) -> bytes:
        """The secret of one table, from its id and the nonce its spec keeps."""
        message = b"rami table secret\0" + table_id.encode() + b"\0" + nonce.encode()
        return hmac.new(self._key, message, hashlib.sha256).digest()


def deal_tip(secret: bytes) -> bytes:
    """The tip of a table's deal chain (``rami.engine.fair``), from the table's secret."""
    return derive_seed(secret, "deal")


def bot_seed(secret: bytes, seat: int, number: int) -> bytes:
    """The seed of a built-in bot's choice at ``seat`` after update ``number``: the same on
    every replay, unknowable without the table's secret."""
    return derive_seed(secret, f"bot {seat}", number)
