"""Helpers shared by the server's socket tests: errors, stacked decks, snapshots, a driver.

Everything here talks to a real server over 127.0.0.1 and bounds every call in time.
"""

from __future__ import annotations

import asyncio
import functools
import importlib.resources
import os
import random
import re
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import grpc
from google.protobuf import descriptor_pb2
from google.rpc import error_details_pb2
from grpc_status import rpc_status
from grpc_tools import protoc

from rami.client.convert import action_to_request, view_from_proto
from rami.engine import POLICIES, Action, Card, get_variant, parse_cards
from rami.engine.cards import full_deck
from rami.v1 import game_pb2, lobby_service_pb2, table_service_pb2, table_service_pb2_grpc

__all__ = [
    "DOMAIN",
    "RPC_TIMEOUT",
    "VARIANTS",
    "Driver",
    "SeatStream",
    "card_mentions",
    "cards",
    "comments",
    "contract",
    "die_with_parent",
    "error_of",
    "error_reasons",
    "md",
    "rami_server",
    "stacked_deck",
    "without_presence",
]

#: Every unary call of these tests gives up after this many seconds.
RPC_TIMEOUT = 10.0
DOMAIN = "rami.v1"
VARIANTS = {
    "portuguese": game_pb2.VARIANT_PORTUGUESE,
    "tallage": game_pb2.VARIANT_TALLAGE,
    "simple": game_pb2.VARIANT_SIMPLE,
}
_PLAYING = (game_pb2.PHASE_DRAW, game_pb2.PHASE_PLAY)
SERVER = Path(sys.executable).with_name("rami-server")
LISTENING = "rami-server listening on "


def md(token: str | None) -> tuple[tuple[str, str], ...]:
    """Call metadata proving a seat (or nothing)."""
    return () if token is None else (("rami-token", token),)


# A card as the server and the engine write it: 10h, Qs, 7♥, JK (never inside a longer word).
_CARD_TEXT = re.compile(r"(?<![A-Za-z0-9])(?:(10|[2-9AJQK])([cdhs♣♦♥♠])|JK)(?![A-Za-z0-9])")


def card_mentions(text: str) -> list[Card]:
    """Every card written in ``text`` (a log, an error message)."""
    return [Card.parse(m.group(0)) for m in _CARD_TEXT.finditer(text)]


def cards(text: str) -> list[int]:
    """Proto Card values of cards written as text: ``cards("7h 8h JK")``."""
    return [int(c) + 1 for c in parse_cards(text)]


@dataclass(frozen=True)
class ErrorOf:
    """A refusal as the client sees it: status code, ErrorInfo reason, domain and metadata."""

    code: grpc.StatusCode
    reason: str
    domain: str
    metadata: dict[str, str]
    message: str


def error_of(e: grpc.RpcError) -> ErrorOf:
    """Read the status and the google.rpc.ErrorInfo detail of a failed call."""
    status = rpc_status.from_call(e)  # type: ignore[arg-type]
    assert status is not None, f"no grpc-status-details-bin on {e!r}"
    infos = []
    for detail in status.details:
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            infos.append(info)
    assert len(infos) == 1, f"expected one ErrorInfo in {status!r}"
    info = infos[0]
    # Every refusal a test meets is one the contract lists, with the code it says.
    documented = error_reasons().get(info.reason)
    assert documented == e.code(), f"{e.code()} {info.reason}: errors.proto says {documented}"  # type: ignore[attr-defined]
    return ErrorOf(e.code(), info.reason, info.domain, dict(info.metadata), status.message)  # type: ignore[attr-defined]


# -- the contract, as protoc reads it (comments included) -------------------------------------


PROTO = Path(__file__).resolve().parents[2] / "proto"
#: The prefix of every ErrorReason value; the reason on the wire is the rest of its name.
REASON_PREFIX = "ERROR_REASON_"


@functools.cache
def contract() -> dict[str, descriptor_pb2.FileDescriptorProto]:
    """Every file of ``proto/rami/v1`` by name, with its comments (protoc's source info)."""
    include = str(importlib.resources.files("grpc_tools") / "_proto")
    files = sorted(str(p.relative_to(PROTO)) for p in (PROTO / "rami" / "v1").glob("*.proto"))
    with tempfile.TemporaryDirectory(prefix="rami-contract-") as scratch:
        out = Path(scratch) / "contract.binpb"
        done = protoc.main(
            [
                "protoc",
                f"-I{PROTO}",
                f"-I{include}",
                "--include_source_info",
                f"--descriptor_set_out={out}",
                *files,
            ]
        )
        assert done == 0, f"protoc could not read {files}"
        described = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
    return {f.name: f for f in described.file}


def comments(file: descriptor_pb2.FileDescriptorProto) -> dict[tuple[int, ...], str]:
    """The leading comment of each element of ``file``, by its source-info path."""
    return {
        tuple(loc.path): loc.leading_comments
        for loc in file.source_code_info.location
        if loc.leading_comments
    }


@functools.cache
def error_reasons() -> dict[str, grpc.StatusCode]:
    """Every reason of the contract's ErrorReason (the name without its prefix), with the status
    code its comment opens with."""
    file = contract()["rami/v1/errors.proto"]
    (index, enum), *_ = [(i, e) for i, e in enumerate(file.enum_type) if e.name == "ErrorReason"]
    said = comments(file)
    reasons: dict[str, grpc.StatusCode] = {}
    for i, value in enumerate(enum.value):
        assert value.name.startswith(REASON_PREFIX), value.name
        if value.number == 0:
            continue
        # 5: a file's enums, 2: an enum's values.
        comment = " ".join(said.get((5, index, 2, i), "").split())
        code, _, when = comment.partition(": ")
        assert code in grpc.StatusCode.__members__ and when, f"{value.name}: {comment!r}"
        reasons[value.name.removeprefix(REASON_PREFIX)] = grpc.StatusCode[code]
    return reasons


def stacked_deck(
    variant: str,
    players: int,
    hands: dict[int, str],
    discard: str,
    stock: str = "",
    *,
    dealer: int = 0,
    seed: int = 1,
) -> lobby_service_pb2.Deck:
    """A whole deck, top card first, that deals ``hands`` (seat: cards, fewer than a whole hand
    is filled up), turns up ``discard`` and leaves ``stock`` (top first) on top of the stock.

    It follows ``Game._deal``: one card at a time to the seats after the dealer in turn, the
    dealer's extra card(s) last, then the discard, then the stock from its top.
    """
    v = get_variant(variant)
    pool = list(full_deck(v.decks, v.jokers))
    wanted = {s: parse_cards(t) for s, t in hands.items()}
    fixed = [c for h in wanted.values() for c in h] + parse_cards(discard) + parse_cards(stock)
    for c in fixed:
        pool.remove(c)  # raises when a card is asked for more often than the deck holds it
    random.Random(seed).shuffle(pool)
    size = {s: v.hand_size + (v.dealer_extra if s == dealer else 0) for s in range(players)}
    full: dict[int, list[Card]] = {}
    for s in range(players):
        own = list(wanted.get(s, []))
        assert len(own) <= size[s], f"seat {s} holds {size[s]} cards"
        while len(own) < size[s]:
            own.append(pool.pop())
        full[s] = own
    deck: list[Card] = []
    taken = {s: 0 for s in range(players)}
    for _ in range(v.hand_size):
        for i in range(1, players + 1):
            s = (dealer + i) % players
            deck.append(full[s][taken[s]])
            taken[s] += 1
    for _ in range(v.dealer_extra):
        deck.append(full[dealer][taken[dealer]])
        taken[dealer] += 1
    deck += parse_cards(discard)
    deck += parse_cards(stock)
    deck += pool
    assert sorted(deck) == sorted(full_deck(v.decks, v.jokers))
    return lobby_service_pb2.Deck(cards=[int(c) + 1 for c in deck])


def plain_move(table_id: str, view: game_pb2.View) -> table_service_pb2.ActRequest:
    """The seat's simplest move in ``view``: draw from the stock, or discard its last card."""
    if view.phase == game_pb2.PHASE_DRAW:
        return table_service_pb2.ActRequest(
            table_id=table_id,
            number=view.number,
            draw=table_service_pb2.DrawAction(source=game_pb2.DRAW_SOURCE_STOCK),
        )
    return table_service_pb2.ActRequest(
        table_id=table_id,
        number=view.number,
        discard=table_service_pb2.DiscardAction(card=view.hand[-1]),
    )


def without_presence(view: game_pb2.View) -> game_pb2.View:
    """A copy of a view without who is connected right now (presence is not game state)."""
    out = game_pb2.View()
    out.CopyFrom(view)
    for p in out.players:
        p.connected = False
    return out


# -- watching and driving seats over grpc.aio ---------------------------------------------


T = TypeVar("T")


async def first_match(stream: Any, items: list[T], pred: Callable[[T], bool], timeout: float) -> T:
    """The first of ``items`` (which ``stream`` appends to, notifying ``stream._changed``)
    that satisfies ``pred``, waiting for it if need be; fails if ``stream.done`` first."""

    async def first() -> T:
        async with stream._changed:
            seen = 0
            while True:
                for item in items[seen:]:
                    if pred(item):
                        return item
                seen = len(items)
                if stream.done:
                    raise AssertionError(f"stream ended ({stream.error!r}) before the item")
                await stream._changed.wait()

    return await asyncio.wait_for(first(), timeout)


@dataclass
class SeatStream:
    """One Watch stream read in the background: every message kept, waiters woken."""

    stub: table_service_pb2_grpc.TableServiceStub
    table_id: str
    token: str | None
    after: int | None = None
    timeout: float = 60.0
    updates: list[table_service_pb2.Update] = field(default_factory=list)
    error: grpc.RpcError | None = None
    done: bool = False
    _changed: asyncio.Condition = field(default_factory=asyncio.Condition)
    _task: asyncio.Task[None] | None = None
    _call: Any = None

    def start(self) -> SeatStream:
        """Open the stream and start reading it."""
        request = table_service_pb2.WatchRequest(table_id=self.table_id, after=self.after)
        self._call = self.stub.Watch(request, metadata=md(self.token), timeout=self.timeout)
        self._task = asyncio.ensure_future(self._read())
        return self

    async def _read(self) -> None:
        try:
            async for msg in self._call:
                if msg.HasField("update"):
                    async with self._changed:
                        self.updates.append(msg.update)
                        self._changed.notify_all()
        except grpc.aio.AioRpcError as e:
            if e.code() != grpc.StatusCode.CANCELLED:
                self.error = e
        finally:
            async with self._changed:
                self.done = True
                self._changed.notify_all()

    async def wait(
        self, pred: Callable[[table_service_pb2.Update], bool], timeout: float = 20.0
    ) -> table_service_pb2.Update:
        """The first update received that satisfies ``pred``, waiting for it if need be."""

        return await first_match(self, self.updates, pred, timeout)

    async def wait_number(self, number: int, timeout: float = 20.0) -> table_service_pb2.Update:
        """The update numbered ``number`` or later."""
        return await self.wait(lambda u: u.number >= number, timeout)

    async def close(self) -> None:
        """Cancel the stream and wait for its reader."""
        if self._call is not None:
            self._call.cancel()
        if self._task is not None:
            await asyncio.wait_for(asyncio.gather(self._task, return_exceptions=True), 10)


@dataclass
class Driver:
    """Plays remote seats through Act with engine policies, decided on each seat's own view.

    ``streams`` holds one open :class:`SeatStream` per seat; every command carries the number of
    the view it was decided on, and every acknowledged number is kept in ``acked``.
    """

    stub: table_service_pb2_grpc.TableServiceStub
    table_id: str
    tokens: dict[int, str]
    streams: dict[int, SeatStream]
    policy: str = "greedy"
    seed: int = 0
    acked: list[int] = field(default_factory=list)
    requests: list[tuple[int, table_service_pb2.ActRequest]] = field(default_factory=list)
    last: int = 0
    _rng: random.Random = field(default_factory=random.Random)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    async def seat_to_move(self) -> tuple[int, game_pb2.View] | None:
        """The seat to move and its view at the latest number; None when the game is over."""
        any_stream = next(iter(self.streams.values()))
        u = await any_stream.wait(
            lambda u: (
                u.number >= self.last
                and (u.view.phase in _PLAYING or u.view.phase == game_pb2.PHASE_GAME_OVER)
            )
        )
        if u.view.phase == game_pb2.PHASE_GAME_OVER:
            return None
        seat = u.view.turn
        own = await self.streams[seat].wait(lambda x: x.number >= u.number)
        return seat, own.view

    def decide(self, view: game_pb2.View) -> Action:
        """The policy's action on a proto view."""
        return POLICIES[self.policy](view_from_proto(view), self._rng)

    async def act(self, seat: int, view: game_pb2.View) -> table_service_pb2.ActResponse:
        """Send the policy's action decided on ``view``."""
        request = action_to_request(self.table_id, view.number, self.decide(view))
        self.requests.append((seat, request))
        response: table_service_pb2.ActResponse = await self.stub.Act(
            request, metadata=md(self.tokens[seat]), timeout=RPC_TIMEOUT
        )
        self.acked.append(response.number)
        self.last = response.number
        return response

    async def play(self, max_actions: int | None = None) -> game_pb2.View | None:
        """Play until the game is over (or ``max_actions`` were acknowledged); the last view."""
        done = 0
        view: game_pb2.View | None = None
        while max_actions is None or done < max_actions:
            found = await self.seat_to_move()
            if found is None:
                return None
            seat, view = found
            while view.phase in _PLAYING and view.turn == seat:
                response = await self.act(seat, view)
                done += 1
                view = response.view
                if max_actions is not None and done >= max_actions:
                    break
        return view


# -- the real rami-server, as a process ---------------------------------------------------


def die_with_parent(parent: int) -> None:
    """In a child of ``parent`` (a ``preexec_fn``, or the first thing a child process does):
    be killed when ``parent`` dies, however it dies (SIGKILL included), or exit at once if it
    has died already. Linux only (PR_SET_PDEATHSIG); the kernel watches the parent's thread
    that started the child."""
    import ctypes

    ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:
        os._exit(1)


@contextmanager
def rami_server(
    db: Path | str,
    log: Path,
    *,
    port: int = 0,
    args: Sequence[str] = (),
    log_level: str = "warning",
    open_files: tuple[int, int] | None = None,
    with_parent: int | None = None,
    hangups_ignored: bool = False,
) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """``rami-server`` on 127.0.0.1 (``port`` 0: a free one), its log appended to ``log``;
    always killed on the way out. Yields the process and its ``host:port``. ``open_files``:
    the (soft, hard) limit of open files it starts with (RLIMIT_NOFILE). ``with_parent``
    (this process's pid): the server is also killed by the kernel when this process dies
    with no way out (see :func:`die_with_parent`; call from the main thread).
    ``hangups_ignored``: started with SIGHUP ignored, as ``nohup`` starts it."""

    def before_exec() -> None:
        import resource
        import signal

        if open_files is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, open_files)
        if with_parent is not None:
            die_with_parent(with_parent)
        if hangups_ignored:
            signal.signal(signal.SIGHUP, signal.SIG_IGN)

    with log.open("a") as err:
        proc = subprocess.Popen(
            [
                str(SERVER),
                "--port",
                str(port),
                "--db",
                str(db),
                "--allow-stacked-decks",
                "--log-level",
                log_level,
                *args,
            ],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            start_new_session=True,
            # Only when needed: a function run between fork and exec is unsafe beside threads.
            preexec_fn=before_exec
            if open_files is not None or with_parent is not None or hangups_ignored
            else None,
        )
    try:
        assert proc.stdout is not None
        line = ""
        deadline = time.monotonic() + 20
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            while LISTENING not in line:
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    raise AssertionError(f"rami-server did not start: {log.read_text()}")
                line = proc.stdout.readline()
                if not line and proc.poll() is not None:
                    raise AssertionError(f"rami-server exited: {log.read_text()}")
        address = line.split(LISTENING, 1)[1].split()[0]
        assert address.startswith("127.0.0.1:")
        yield proc, address
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()
