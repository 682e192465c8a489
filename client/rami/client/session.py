"""The interactive client: one person at one server, in the lobby or at one table.

A prompt-toolkit ``PromptSession`` reads commands inside ``patch_stdout``; the panel above the
prompt (melds and hand) and the bottom toolbar (whose turn, clock, table, players) are drawn
from the latest view, and events from the watch stream are printed above as sentences while
the person types. Every command either goes through or is refused with the server's reason,
and a refusal changes nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import shlex
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypeVar

import grpc
from prompt_toolkit import PromptSession
from prompt_toolkit.application import Application, get_app_or_none, get_app_session
from prompt_toolkit.data_structures import Size
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.patch_stdout import patch_stdout
from prompt_toolkit.shortcuts import CompleteStyle

from rami.engine import (
    Card,
    Declare,
    Draw,
    Lay,
    Meld,
    TakeJoker,
    Variant,
    format_action,
)
from rami.engine import events as ev
from rami.v1 import (
    game_pb2,
    lobby_service_pb2,
    table_service_pb2,
)

from .checks import (
    cannot,
    has_drawn,
    incomplete,
    is_card,
    my_turn,
    not_held,
    refusal,
    sentence,
    untaken_top,
)
from .commands import (
    LOBBY,
    OVER,
    PLAYING,
    WAITING,
    WATCHING,
    available,
    find,
    not_in_variant,
    split_command,
    suggest,
    why_not_in_variant,
)
from .completion import Situation, TableCompleter
from .convert import (
    VARIANT_IDS,
    action_to_request,
    card,
    cards,
    event_from_proto,
    meld_from_proto,
    options_to_proto,
    result_from_proto,
    variant_of,
    view_from_proto,
)
from .finder import TableFinder
from .helptext import help_lines
from .hints import hint_lines
from .history import command_history
from .keys import key_bindings
from .link import CALL_WAIT, Answered, Link, LinkError, NotSent, Refused, Unreachable
from .look import STYLE, Look
from .moves import MOVES, MoveError, missing_cards, parse_move
from .narrate import Scene, narrate
from .newtable import NewTable, parse_create
from .panel import (
    NAME_CELLS,
    i_opened,
    menu_rows,
    my_seat,
    panel_fragments,
    plural,
    prompt_fragments,
    seat_names,
    table_lines,
    toolbar_fragments,
    your_turn_fragments,
)
from .pile import Pile
from .printer import Printer
from .safetext import safe
from .scores import score_sheet
from .seats import Preferences, SavedSeat, SeatBook, Seats
from .staging import WHERE_JOKER, Stage, plan
from .tablelist import joinable, short_ids, table_summary

__all__ = ["DEFAULT_TURN_SECONDS", "ClientSession"]

#: The longest table name the server takes (CreateTableRequest.name).
MAX_TABLE_NAME = 40

#: The turn clock of a table made with ``create`` when no turn_seconds is given.
DEFAULT_TURN_SECONDS = 60

T = TypeVar("T")

#: Refusals that say a written-down seat can't be taken back.
_SEAT_GONE = (
    grpc.StatusCode.NOT_FOUND,
    grpc.StatusCode.UNAUTHENTICATED,
    grpc.StatusCode.PERMISSION_DENIED,
)

_NOT_HERE = {
    LOBBY: "You are not at a table: tables lists them, join N or join ID sits at one, "
    "create starts one.",
    WAITING: "The game has not started yet: bot seats a bot, start starts it.",
    WATCHING: "You are watching: spectators can't play. leave returns to the lobby.",
    PLAYING: "The game is on already: that was for before it.",
    OVER: "The game is over: rematch starts a new one, scores shows the last, leave returns to "
    "the lobby.",
}

#: What a command says where it can't be used, when it says more than :data:`_NOT_HERE`.
_NOT_HERE_FOR = {
    ("say", WATCHING): "You are watching: the chat is the players'; you read it. leave returns "
    "to the lobby.",
    ("rematch", PLAYING): "A rematch is for when the game is over: rematch then starts a new "
    "table with the same game, options and bots.",
}


@dataclass(frozen=True, slots=True)
class _Question:
    """A question waiting for yes: the prompt that asks it, what to say if not, and what yes
    does."""

    prompt: str
    no: str
    yes: Callable[[], Awaitable[None]]
    #: Whether the question still applies to the table as the latest update left it (None:
    #: always); when it no longer does, it is dropped, saying ``gone``.
    applies: Callable[[game_pb2.View], bool] | None = None
    gone: str = ""


#: Seconds after this seat's clock ran out in which a move typed is taken as meant for the
#: turn the server played, and not sent.
TOO_LATE = 3.0

#: What the server does with a seat whose player is away (the engine's safe move), said
#: before a player leaves a game: it keeps the game going, not the player's chances.
STAND_IN = "It only draws and discards for you: it lays nothing."


def stand_in(variant: Variant | None) -> str:
    """What the server's stand-in does for a seat that left, said before the player leaves
    (a new player expected it to lay, and in portuguese, to keep their melds)."""
    if variant is not None and variant.declares:
        return (
            "It only draws and discards for you: it never declares, and its discards may break"
            " up your melds."
        )
    return STAND_IN


def _timed_out(update: table_service_pb2.Update, seat: int | None) -> bool:
    """The update tells that ``seat``'s turn ran out: the server played for it."""
    return seat is not None and any(
        m.WhichOneof("kind") == "turn_timed_out" and m.turn_timed_out.seat == seat
        for m in update.events
    )


def lost_note(seconds: float) -> str:
    """The toolbar's note while the connection is lost, with how long it has been, once it
    is more than a few seconds."""
    whole = int(seconds)
    if whole < 5:
        return "connection lost: reconnecting..."
    took = f"{whole // 60} min {whole % 60:02d} s" if whole >= 60 else f"{whole} s"
    return f"connection lost for {took}: reconnecting..."


def _its_rematch(table: lobby_service_pb2.TableInfo) -> str:
    """Where a finished table's rematch is, if one of its players made it, for a line of the
    lobby ("; its rematch is table T: join T to play again"), else ""."""
    made = safe(table.rematch_table_id, 32)
    return f"; its rematch is table {made}: join {made} to play again" if made else ""


class ClientSession:
    """The interactive client's state and commands."""

    def __init__(
        self,
        link: Link,
        *,
        name: str,
        look: Look,
        local: bool = False,
        seats: Seats | None = None,
        prefs: Preferences | None = None,
        history: Path | None = None,
        seats_elsewhere: SeatBook | None = None,
    ) -> None:
        self.link = link
        #: The seats of the profile that another running client keeps (this one keeps none):
        #: read, never written, to say why a seat held is not taken back here.
        self.seats_elsewhere = seats_elsewhere
        #: The file of the commands typed, recalled by Up in the next run (None: none kept).
        self.history = history
        #: Where the seats taken are written down, to be taken back after a restart.
        self.seats = seats
        if prefs is None and isinstance(seats, SeatBook):
            prefs = seats.prefs
        #: The profile's preferences (the seat book's when not given).
        self.prefs = prefs
        #: The server ends with the client (``play``): quitting needs no goodbye.
        self.local = local
        self.name = name
        self.look = look
        self.out = Printer(look, columns=lambda: self._terminal().columns)
        self.table_id: str | None = None
        self.table_name = ""
        self.token: str | None = None
        self.view: game_pb2.View | None = None
        #: The latest view from the stream (the melds before each event are read from it).
        self._streamed: game_pb2.View | None = None
        #: The tables as last listed, and what a table typed means.
        self.finder = TableFinder(link, self.out, self._held_here)
        self.finder.after_print = self._say_seats_listed
        self.stage = Stage()
        #: The stages before each staged command, with what was typed (undo goes back one).
        self._staged_before: list[tuple[Stage, str]] = []
        #: A question waiting for its answer (the prompt asks it until then).
        self._question: _Question | None = None
        #: Taking a seat back: the table's number then, until the updates missed are told.
        self._catching_up: int | None = None
        #: Taking back a seat left (away): until the update that brings it back, the catching
        #: up goes on.
        self._returning = False
        #: Taking a seat back after many updates: up to this one, the moves are not told one by
        #: one (only what rounds, chat and players did), the last ones are.
        self._brief_until: int | None = None
        #: The server plays the seat's turn, whose clock ran out: its moves are told as the
        #: server's until the turn passes.
        self._server_turn = False
        #: When this seat's clock last ran out (monotonic): a move typed in the moments after
        #: was meant for the turn the server played (:data:`TOO_LATE`).
        self._ran_out: float | None = None
        #: The last update of the table followed that is written down as seen (see seats).
        self._seen = 0
        #: While the past of a table is read quietly, the update where the telling starts.
        self._quiet_until: int | None = None
        #: Whether the player had opened when their turn began (one who opens lays again only
        #: from the next turn).
        self._opened_before_turn = False
        #: The warning that the player's turn clock runs out soon: the deadline it is for
        #: (seconds since the epoch), and its timer.
        self._clock_warning: tuple[float, asyncio.TimerHandle] | None = None
        #: The discard pile's recent throws, followed from the stream.
        self.pile = Pile()
        #: The hand sorted by rank (else by suit): the profile's choice, kept between runs.
        self.by_rank = self.prefs is not None and self.prefs.preference("sort") == "rank"
        self.note = ""
        #: Since when (monotonic) the connection is lost, while it is.
        self._lost_since: float | None = None
        #: The rematches the lobby named (a game that ended while away) -> the seat held in
        #: that game: join takes it there, where it is free.
        self._rematch_seats: dict[str, int] = {}
        #: How the game of the table followed ended has been told (live, or from a snapshot).
        self._end_told = False
        self.done = False
        self._watcher: asyncio.Task[None] | None = None
        self._followed = asyncio.Event()
        self._session: PromptSession[str] | None = None
        #: The terminal's size at the last drawing (a change redraws the whole screen).
        self._size: Size | None = None

    # -- where the person is -----------------------------------------------------------------

    @property
    def where(self) -> str:
        """Lobby, waiting at a table, playing at it, seated at its game once over, or watching
        it."""
        if self.table_id is None:
            return LOBBY
        if self.token is None:
            return WATCHING
        if self.view is None or self.view.phase == game_pb2.PHASE_WAITING:
            return WAITING
        if self.view.phase == game_pb2.PHASE_GAME_OVER:
            return OVER
        return PLAYING

    def _hand(self) -> list[Card]:
        """The hand a move may use: the cards held, plus what a staged move brings in."""
        if self.view is None:
            return []
        hand = list(cards(self.view.hand))
        if self.stage.draw is not None:
            hand.append(self.stage.draw)
        hand += [Card(52)] * self.stage.jokers
        return hand

    def _situation(self) -> Situation:
        view = self.view
        melds: tuple[tuple[int, Meld, str], ...] = ()
        if view is not None:
            names = seat_names(view)
            melds = tuple(
                (m.number, meld_from_proto(m.meld), names[m.owner] if m.owner < len(names) else "")
                for m in view.melds
            )
        shorts = short_ids([t.table_id for t in self.finder.seen])
        listed = tuple(
            (short, f"{i}: {table_summary(t)}")
            for i, (t, short) in enumerate(zip(self.finder.seen, shorts, strict=True), 1)
        )
        return Situation(self.where, self.look, tuple(self._hand()), melds, listed, self._variant())

    def _variant(self) -> Variant | None:
        return variant_of(self.view.variant) if self.view is not None else None

    # -- the prompt --------------------------------------------------------------------------

    @staticmethod
    def _terminal() -> Size:
        app = get_app_or_none()
        output = app.output if app is not None else get_app_session().output
        try:
            return output.get_size()
        except Exception:  # an output that can't tell its size
            return Size(rows=40, columns=100)

    def _message(self) -> StyleAndTextTuples:
        staged = "" if self.stage.empty else self.stage.describe(self.look.card_text)
        size = self._terminal()
        panel = panel_fragments(
            self.view,
            self.look,
            by_rank=self.by_rank,
            staged=staged,
            width=size.columns,
            rows=size.rows,
            pile=self.pile,
        )
        if self._question is not None:
            return [*panel, ("class:warn", f"{self._question.prompt} [y/N]> ")]
        return [*panel, *prompt_fragments(self.view, self.look)]

    def _room(self) -> int:
        """The rows above the panel, where what is printed stays in view (less the row that
        repeats the command typed)."""
        size = self._terminal()
        panel = _height(self._message()) - 1  # the prompt's row is the menu's first
        used = panel + max(1, menu_rows(size.rows, self.view)) + _height(self._toolbar())
        return max(3, size.rows - used - 1)

    def _toolbar(self) -> StyleAndTextTuples:
        size = self._terminal()
        note = self.note
        if note and self._lost_since is not None:  # redrawn every second: the time counts
            note = lost_note(time.monotonic() - self._lost_since)
        return toolbar_fragments(
            self.view,
            self.look,
            note=note,
            width=size.columns,
            rows=size.rows,
            staged=not self.stage.empty,
            joker=self.stage.jokers > 0,
        )

    def _before_render(self, app: Application[str]) -> None:
        """Fit the prompt to the terminal before each drawing: the room kept for the
        completion menu shrinks with the window, and a new size redraws the screen."""
        size = app.output.get_size()
        if self._session is not None:
            self._session.reserve_space_for_menu = menu_rows(size.rows, self.view)
        if self._size is not None and size != self._size:
            app.create_background_task(self._repaint(app))
        self._size = size

    async def _repaint(self, app: Application[str]) -> None:
        """After a resize: clear the screen (lines the terminal rewrapped would stay behind)
        and print again the last lines that fit above the panel."""
        await asyncio.sleep(0)
        if not app.is_running:
            return
        size = app.output.get_size()
        # The screen cleared line by line: terminals (tmux, VTE) scroll a whole screen that
        # is erased at once ("erase screen", or "erase below" from its top) into their
        # history first, and the lines printed again would be there twice.
        app.renderer.erase()
        for row in range(1, size.rows + 1):  # (the terminal counts rows from 1)
            app.output.cursor_goto(row, 1)
            app.output.erase_end_of_line()
        app.output.cursor_goto(1, 1)
        app.output.flush()
        app.renderer.request_absolute_cursor_position()
        used = app.layout.container.preferred_height(size.columns, size.rows).preferred
        self.out.again(size.rows - used, size.columns)
        app.invalidate()

    def _refresh(self) -> None:
        if self._session is not None and self._session.app.is_running:
            self._session.app.invalidate()

    async def run(
        self,
        greeting: Sequence[str] = (),
        setup: Callable[[ClientSession], Awaitable[None]] | None = None,
    ) -> None:
        """Read and run commands until ``quit`` or Ctrl-D; ``setup`` runs first (``play``
        creates its table there)."""
        self._session = PromptSession(
            message=self._message,
            history=command_history(self.history),
            bottom_toolbar=self._toolbar,
            completer=TableCompleter(self._situation),
            complete_while_typing=True,
            complete_style=CompleteStyle.MULTI_COLUMN,
            key_bindings=key_bindings(self),
            style=STYLE,
            include_default_pygments_style=False,
            color_depth=self.look.color_depth,
            refresh_interval=1.0,
            erase_when_done=True,
            reserve_space_for_menu=menu_rows(self._terminal().rows, self.view),
        )
        self._session.app.before_render += self._before_render
        with patch_stdout():
            for line in greeting:
                self.out.info(line)
            if setup is not None:
                try:
                    await setup(self)
                except (LinkError, ValueError) as e:
                    self.out.error(sentence(str(e)))
            while not self.done:
                try:
                    line = await self._session.prompt_async()
                except KeyboardInterrupt:
                    continue
                except EOFError:
                    if await self._end_of_input():
                        break
                    continue
                await self.handle(line)
            await self._farewell()
        await self._stop_watching()

    async def _farewell(self) -> None:
        """Leaving the client mid-game gives the seat to the server, so nobody waits for it."""
        view = self.view
        if self.local or self.where != PLAYING or view is None:
            return  # (a game over is no place of PLAYING's: nothing to hand over)
        with contextlib.suppress(LinkError):
            await self._leave()
            if self.seats is not None:
                self.out.info(
                    "You left the game: the server plays your seat until you take it back "
                    "(rami-client connect, then join)."
                )
            else:
                self.out.info("You left the game: the server plays your seat from now on.")

    async def handle(self, line: str) -> None:
        """Run one typed line; mistakes and refusals are explained, never raised."""
        line = line.strip()
        if not line:
            asked, self._question = self._question, None
            if asked is not None:  # Enter alone: the [y/N] prompt's N
                self.out.info(asked.no)
                self._refresh()
            return
        self.out.line([("class:dim", "> "), ("class:dim", line)])
        question, self._question = self._question, None
        if question is not None:
            answer = line.lower()
            if answer in ("yes", "y"):
                try:
                    await question.yes()
                except (LinkError, MoveError, ValueError) as e:
                    self.out.error(sentence(str(e)))
                self._refresh()
                return
            self.out.info(question.no)
            if answer in ("no", "n"):
                return
        name, args = split_command(line)
        command = find(name)
        if command is None and self.where == PLAYING and is_card(name):
            self.out.error(
                f"To discard it, type discard {name}; to lay it, type lay {name} with the cards "
                "it melds with."
            )
            return
        if command is None:
            # What could run here first; a command of elsewhere only if the word is a near
            # miss of it ("dicsard" in the lobby, told then where it runs; "clear" is no
            # "declare").
            guess = suggest(name, available(self.where, self._variant()), begun=True) or suggest(
                name, cutoff=0.75
            )
            also = f" Did you mean {guess}?" if guess else ""
            self.out.error(f"There is no command {name!r}.{also} help lists them.")
            return
        if self.where not in command.where:
            if self.where != LOBBY and LOBBY in command.where:
                self.out.error(f"{command.name} is for the lobby: leave this table first.")
            else:
                said = _NOT_HERE_FOR.get((command.name, self.where), _NOT_HERE[self.where])
                self.out.error(said)
            return
        variant = self._variant()
        if command.name in MOVES and variant and command.name in not_in_variant(variant):
            # Said first, whatever follows the word: no card to ask for, nothing to send.
            drawn = self.view is not None and has_drawn(self.view)
            self.out.error(f"{why_not_in_variant(command.name, variant, drawn)} Nothing was sent.")
            return
        try:
            if command.name in MOVES:
                await self._move(command.name, args)
            else:
                await getattr(self, f"_do_{command.name}")(args)
        except (LinkError, MoveError, ValueError) as e:
            self.out.error(sentence(str(e)))
        self._refresh()

    # -- keys --------------------------------------------------------------------------------

    def toggle_sort(self) -> None:
        """Sort the hand by rank instead of by suit, or back."""
        self.by_rank = not self.by_rank
        self._keep_sort()

    def _keep_sort(self) -> None:
        """Write the hand's order down for the next run (the profile's preference)."""
        if self.prefs is not None:
            self.prefs.prefer("sort", "rank" if self.by_rank else "suit")

    def show_help(self) -> None:
        """Print the commands that apply now."""
        self._print_help("")

    def show_table(self) -> None:
        """Print the whole table."""
        if self.view is not None:
            self.out.lines(table_lines(self.view, self.look, self.table_name))

    # -- moves -------------------------------------------------------------------------------

    def ask(
        self,
        question: str,
        prompt: str,
        no: str,
        yes: Callable[[], Awaitable[None]],
        applies: Callable[[game_pb2.View], bool] | None = None,
        gone: str = "",
    ) -> None:
        """Put ``question``, the prompt asking ``prompt`` until it is answered: the next line
        yes (or y) runs ``yes``; anything else says ``no`` (and runs as a command unless it is
        no). ``applies``: whether the question still stands for the table's latest view; an
        update after which it does not drops it, saying ``gone`` (a yes typed then would
        answer a question that no longer makes sense)."""
        self.out.warn(f"{question} A command typed instead answers no, then runs.")
        self._question = _Question(prompt, no, yes, applies, gone)

    async def _move(self, name: str, args: str, *, confirmed: bool = False) -> None:
        view = self.view
        assert view is not None and self.table_id is not None
        ran_out, self._ran_out = self._ran_out, None
        if ran_out is not None and time.monotonic() - ran_out < TOO_LATE and not confirmed:
            # Typed for the turn the server has just played: refused with a card "you don't
            # hold" (the server discarded it), or sent into a turn not looked at yet.
            what = f"{name} {args}".strip()
            self.out.error(
                "Too late: your clock ran out and the server played that turn for you (above);"
                f" {what} was not sent. Look at the table, then type your move again."
            )
            return
        action = parse_move(name, args, cards(view.hand))
        if isinstance(action, Lay) and self.stage.steps:
            # A take typed again is not a card short: it is waiting for its joker's place.
            again = tuple(s for s in action.steps if s in self.stage.steps)
            if again and all(isinstance(s, TakeJoker) for s in again):
                self.out.error(f"{format_action(Lay(again))} is staged already: {WHERE_JOKER}.")
                return
        variant = variant_of(view.variant)
        assert variant is not None  # a move is only parsed at a table's game
        cannot_go = cannot(
            action,
            view,
            variant,
            stage=self.stage,
            opened_before_turn=self._opened_before_turn,
            card_text=self.look.card_text,
        )
        if cannot_go:
            self.out.error(cannot_go)
            return
        if isinstance(action, Declare) and action.card not in cards(view.hand):
            self.out.error(not_held([action.card], list(cards(view.hand)), self.look.card_text))
            return
        if isinstance(action, Declare) and not confirmed:
            question = incomplete(action.card, view, self.look.card_text)
            if question:
                self.ask(
                    question,
                    "declare anyway?",
                    "Not declared.",
                    lambda: self._move(name, args, confirmed=True),
                    applies=lambda v: (
                        my_turn(v) and v.phase == game_pb2.PHASE_PLAY and v.round == view.round
                    ),
                    gone="Your turn is over: declare anyway? is no longer asked (nothing was"
                    " declared).",
                )
                return
        top = card(view.discard_top)
        untaken = untaken_top(view)  # a move's one missing card that is it: said so
        decided = plan(
            action, self.stage, variant=variant, discard_top=top, card_text=self.look.card_text
        )
        if decided.send is None and decided.stage.steps:
            # What waits for its lay must be playable from what is held (and what it brings).
            held = list(cards(view.hand)) + ([decided.stage.draw] if decided.stage.draw else [])
            short = missing_cards(Lay(decided.stage.steps), held)
            if short:
                self.out.error(
                    not_held(short, held, self.look.card_text, "Nothing was staged.", untaken)
                )
                return
        if decided.note and decided.send is None:
            self.out.warn(sentence(decided.note))
        if decided.send is None:
            if decided.stage == self.stage:
                return  # refused (the note says why), or staged already: nothing to undo
            if self.stage.empty:
                self._staged_before = []
            self._staged_before.append((self.stage, f"{name} {args}".strip()))
            self.stage = decided.stage
            return
        hand = list(cards(view.hand))
        if isinstance(decided.send, Draw) and decided.send.source == "discard" and top is not None:
            hand.append(top)
        missing = missing_cards(decided.send, hand)
        if missing:
            taking = isinstance(decided.send, Draw) and decided.send.source == "discard"
            self.out.error(
                not_held(missing, hand, self.look.card_text, pile_top=None if taking else untaken)
            )
            return
        request = action_to_request(self.table_id, view.number, decided.send)
        what = f"{name} {args}".strip()
        self._say_if_down(what)
        try:
            response = await self._sent(
                what, self.link.call(self.link.table.Act, request, token=self.token)
            )
        except Refused as e:
            self.out.error(refusal(e, seat_names(view), view.bar))
            if not self.stage.empty:
                staged = self.stage.describe(self.look.card_text)
                self.out.info(f"Still staged: {staged} (type its lay again, or cancel drops it).")
            return
        self.stage = decided.stage
        if decided.note:  # what the move replaced (a staged draw of the discard): once made
            self.out.info(sentence(decided.note))
        self._set_answer_view(response.view)

    def _set_answer_view(self, view: game_pb2.View) -> None:
        """Show the view an Act's answer brings, unless the stream's update after it came
        first (the next seat's move, read before the answer on a busy machine): the newer
        view stays."""
        shown = self.view
        if shown is not None and shown.table_id == view.table_id and shown.number > view.number:
            return
        self._set_view(view)

    # -- the watch stream --------------------------------------------------------------------

    async def _watch(self, after: int | None = None) -> None:
        assert self.table_id is not None
        try:
            async for update in self.link.updates(
                self.table_id,
                self.token,
                self._on_status,
                after=after,
                on_presence=self._on_presence,
            ):
                self._on_update(update)
                if self._quiet_until is None:
                    self._followed.set()
        except asyncio.CancelledError:
            raise
        except LinkError as e:
            if isinstance(e, Refused) and e.reason == "TAKEN_OVER":
                # The seat is still this person's: the other client has it open now.
                self.out.error(
                    "Another client took this seat over (it has the seat's token): it plays "
                    "the seat now. You are back in the lobby; join takes the seat back."
                )
                self._left_table()
                self._refresh()
                return
            if isinstance(e, Refused) and e.code in _SEAT_GONE:
                self._forget_seat()  # the table, or the seat's token, is no longer known
            if isinstance(e, Refused) and e.code == grpc.StatusCode.NOT_FOUND:
                self.out.error(
                    "The server no longer has this table (it restarted without "
                    "keeping its tables). You are back in the lobby."
                )
            else:
                self.out.error(f"The table can't be followed any more: {sentence(str(e))}")
            self._left_table()
        except Exception as e:  # the stream must never take the prompt down with it
            self.out.error(f"Lost the table's stream: {sentence(str(e))}")
            self._left_table()
        self._refresh()

    def _on_presence(self, connected: list[bool]) -> None:
        """Who is connected now (a heartbeat says so when it changes, with no new update)."""
        for view in (self.view, self._streamed):
            if view is None or len(view.players) != len(connected):
                continue
            for player, live in zip(view.players, connected, strict=True):
                player.connected = live
        self._refresh()

    def _on_status(self, status: str) -> None:
        if status == "took_over":
            self.out.warn(
                "This seat was open in another client too: it has been told, and the seat is "
                "played from here now."
            )
            return
        if status == "behind":
            # What was shown is newer than the table: its views from here on are the ones.
            self.view = self._streamed = None
            self.stage = Stage()
            self._question = None
            self._seen = 0
            self.out.warn(
                "The table is behind what you saw (its server went back to an earlier state):"
                " the moves since are gone. Following it from where it is now."
            )
            self._refresh()
            return
        if status == "lost":
            self.note = lost_note(0)
            self._lost_since = time.monotonic()
            self.out.warn("The connection to the server dropped; reconnecting...")
        else:
            self.note = ""
            self._lost_since = None
            self.out.info("Reconnected: the table is up to date.")
        self._refresh()

    def _on_update(self, update: table_service_pb2.Update) -> None:
        if self._quiet_until is not None:
            # The past, read for what it shows of the pile: told to nobody.
            for msg in update.events:
                event = event_from_proto(msg)
                if event is not None:
                    self.pile.apply(event)
            if update.number < self._quiet_until:
                return
            self._quiet_until = None
            # Where the telling starts: shown as the table is (a snapshot), or, before the
            # updates missed, as the last one seen (its events were told).
            update = table_service_pb2.Update(
                number=update.number, view=update.view, snapshot=self._catching_up is None
            )
        before = self.view
        after = update.view
        me = my_seat(after)
        streamed, self._streamed = self._streamed, after
        melds_before = (
            {m.number: meld_from_proto(m.meld) for m in streamed.melds} if streamed else {}
        )
        if _timed_out(update, me):
            self._server_turn = True
            if self._catching_up is None:  # now, not a turn of the history told at a join
                self._ran_out = time.monotonic()
        scene = Scene(
            names=seat_names(after),
            look=self.look,
            me=me,
            melds_before=melds_before,
            drawn=card(after.drawn) if me is not None else None,
            rounds=len(after.results),
            variant=variant_of(after.variant),
            jokers_per_meld=after.options.jokers_per_meld or 1,
            # The moves of the seat while its player was away were the server's, and so are
            # those of a turn whose clock ran out (the draw told with the timeout, the discard
            # in the next update).
            stand_in="The server (for you)"
            if self._catching_up is not None or self._server_turn
            else "",
            in_game=after.phase
            in (game_pb2.PHASE_DRAW, game_pb2.PHASE_PLAY, game_pb2.PHASE_ROUND_OVER),
        )
        brief = self._brief_until is not None and update.number <= self._brief_until
        for msg in update.events:
            event = event_from_proto(msg)
            if event is not None:
                self.pile.apply(event)
                # Told briefly, the moves of the others are left out; never the server's
                # for this seat: what became of the player's own hand is told in full.
                if not (
                    brief
                    and msg.WhichOneof("kind") in _MOVE_EVENTS
                    and (me is None or getattr(event, "seat", None) != me)
                ):
                    self.out.lines(narrate(event, scene))
        if after.phase in (game_pb2.PHASE_DRAW, game_pb2.PHASE_PLAY):
            self.pile.sync(card(after.discard_top))
        if self._server_turn and not (
            after.turn == me and after.phase in (game_pb2.PHASE_DRAW, game_pb2.PHASE_PLAY)
        ):
            self._server_turn = False  # the turn the server played for the seat is over
        elif not self._server_turn and after.turn == me and my_turn(after):
            self._ran_out = None  # the seat's next turn: a move typed now is meant for it
        if update.snapshot:
            self._snapshot(after)
            if after.phase == game_pb2.PHASE_GAME_OVER and after.results and not self._end_told:
                # A game that ended before it was followed: how it ended, as told live (once:
                # a table restored from a backup is followed again from a snapshot).
                self._end_told = True
                last = result_from_proto(after.results[-1])
                for ending in (
                    ev.RoundEnded(last),
                    ev.GameEnded(last.totals, tuple(after.winners)),
                ):
                    self.out.lines(narrate(ending, scene))
        if self._returning and (
            me is None
            or after.phase in (game_pb2.PHASE_WAITING, game_pb2.PHASE_GAME_OVER)
            or any(
                m.WhichOneof("kind") == "player_returned" and m.player_returned.seat == me
                for m in update.events
            )
        ):
            # Back (or the game ended first: nothing to come back to). Not before: the updates
            # told first may be from before the seat was away (a client that crashed).
            self._returning = False
        caught_up = (
            self._catching_up is not None
            and after.number >= self._catching_up
            and not self._returning
        )
        if caught_up:
            self._catching_up = self._brief_until = None
            self.out.info("You are up to date:")
            self._snapshot(after)
        if before is None or after.number >= before.number:
            # Caught up on a turn of one's own: it is told now (the updates told while
            # catching up were the past, whose turns are not announced).
            self._set_view(after, announce=caught_up)
        if (
            self._catching_up is None
            and self.token is not None
            and after.phase not in (game_pb2.PHASE_WAITING, game_pb2.PHASE_GAME_OVER)
            and after.number > self._seen
        ):
            # Written down as it is shown, not only when the player leaves: a client that
            # crashes or whose window is closed tells, next time, only what it never showed.
            self._seen = after.number
            self._note_seen(after.number)
        if after.phase == game_pb2.PHASE_GAME_OVER:
            self._forget_seat()  # nothing left to come back to
            if any(m.WhichOneof("kind") == "game_ended" for m in update.events):
                self._end_told = True
                if my_seat(after) is None:  # a spectator makes no rematch
                    self.out.info("save FILE keeps the game record; leave goes back to the lobby.")
                else:
                    self.out.info(
                        "save FILE keeps the game record; rematch starts a new table with the "
                        "same game, options and bots; leave goes back to the lobby."
                    )

    def _snapshot(self, view: game_pb2.View) -> None:
        if view.phase == game_pb2.PHASE_WAITING:
            return
        self.out.lines(table_lines(view, self.look, self.table_name))

    def _set_view(self, view: game_pb2.View, announce: bool = False) -> None:
        before = self.view
        self.view = view
        asked = self._question
        if asked is not None and asked.applies is not None and not asked.applies(view):
            self._question = None
            self.out.info(asked.gone)
        mine = my_turn(view)
        if not mine:
            self.stage = Stage()
        new_turn = before is None or not my_turn(before) or before.round != view.round
        if mine and new_turn:
            self._opened_before_turn = i_opened(view)
        # Not the past turns told again (catching up); ``announce``: the turn as it stands.
        if mine and (new_turn or announce) and self._catching_up is None:
            self.out.line(your_turn_fragments(view, self.look))
        self._warn_of_the_clock(view)
        self._refresh()

    def _warn_of_the_clock(self, view: game_pb2.View) -> None:
        """On the player's turn with a clock, say in words, :data:`CLOCK_WARNING` seconds
        before it runs out, that the server then plays for them (the toolbar's countdown is
        easy to miss); once a turn, and not once they have moved on."""
        deadline = (
            view.turn_deadline.ToNanoseconds() / 1e9
            if my_turn(view) and view.HasField("turn_deadline")
            else None
        )
        if self._clock_warning is not None:
            if self._clock_warning[0] == deadline:
                return  # the same turn's clock: armed already
            self._clock_warning[1].cancel()
            self._clock_warning = None
        if deadline is None:
            return
        delay = deadline - time.time() - CLOCK_WARNING
        if delay <= 0:
            return  # taken back with less left: the toolbar says it
        loop = asyncio.get_running_loop()
        self._clock_warning = (deadline, loop.call_later(delay, self._clock_runs_out, deadline))

    def _clock_runs_out(self, deadline: float) -> None:
        view = self.view
        if view is None or not my_turn(view) or not view.HasField("turn_deadline"):
            return
        if view.turn_deadline.ToNanoseconds() / 1e9 != deadline:
            return
        if self.note:
            # The connection is down: no server to play for the player, and one that comes
            # back gives the turn a new clock (which the toolbar shows then).
            return
        self.out.warn(f"{CLOCK_WARNING} seconds left in your turn: then the server plays for you.")

    # -- at the table ------------------------------------------------------------------------

    async def _watch_table(
        self,
        table_id: str,
        token: str | None,
        name: str,
        after: int | None = None,
        history: int = 0,
    ) -> None:
        """Follow ``table_id`` (as the seat ``token`` proves, or as a spectator): from a
        snapshot, or, ``after`` an update seen before, with every update since, told.
        ``history``: the table's number when it was looked up, for a game under way: the
        updates before the first one told are read first, told to nobody, for what this
        client shows of the past (who threw each card of the discard pile)."""
        await self._stop_watching()
        self._end_told = False
        self.table_id, self.token, self.table_name = table_id, token, name
        self.view = self._streamed = None
        self.stage = Stage()
        self.pile = Pile()
        self._seen = 0
        self._followed = asyncio.Event()
        self._quiet_until = None
        if history > 0:
            # Up to the update told first (a snapshot's, or the last one seen): read quietly.
            self._quiet_until = after if after is not None else history
            after = max(0, self._quiet_until - QUIET_HISTORY)
        watcher = asyncio.get_running_loop().create_task(self._watch(after), name="watch")
        self._watcher = watcher
        # Wait for the table's first update, so what follows is told in order.
        followed = asyncio.ensure_future(self._followed.wait())
        await asyncio.wait({followed, watcher}, timeout=5, return_when=asyncio.FIRST_COMPLETED)
        followed.cancel()

    async def _stop_watching(self) -> None:
        task, self._watcher = self._watcher, None
        if task is not None and task is not asyncio.current_task():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    def _left_table(self) -> None:
        self._catching_up = self._brief_until = None
        self._returning = False
        self._server_turn = False
        self.table_id = self.token = None
        self.view = self._streamed = None
        self.stage = Stage()
        self.note = ""

    async def _leave(self) -> None:
        """Give up the seat (the server plays it from now on) or stop watching."""
        if self.view is None or self.view.phase == game_pb2.PHASE_WAITING:
            self._forget_seat()  # before the game, the seat is free again once left
        # The stream first: the server ends a seat's streams when its player leaves before the
        # game, and that end is no news to show.
        await self._stop_watching()
        if self.token is not None and self.table_id is not None:
            request = lobby_service_pb2.LeaveTableRequest(table_id=self.table_id)
            # A finished game has no seat to give up; leaving is still right.
            with contextlib.suppress(Refused):
                left = await self.link.call(self.link.lobby.LeaveTable, request, token=self.token)
                self._note_seen(left.table.number)
        self._left_table()

    def _note_seen(self, number: int) -> None:
        """Write down, with the seat kept, the last update its player saw (their own leave):
        taking the seat back tells what happened after it."""
        if self.seats is None or self.table_id is None:
            return
        saved = self.seats.find(self.link.target, self.table_id)
        if saved is not None:
            self.seats.save(replace(saved, seen=number))

    async def _do_leave(self, args: str, *, confirmed: bool = False) -> None:
        view = self.view
        seated = self.where in (PLAYING, OVER) and view is not None and my_seat(view) is not None
        game_on = view is not None and view.phase not in (
            game_pb2.PHASE_WAITING,
            game_pb2.PHASE_GAME_OVER,
        )
        # Leaving a game under way hands the seat to the server (a game of `rami-client
        # play` too: its bots play on).
        back = " until you take it back (join)" if self.seats is not None else " from now on"
        if seated and game_on and not confirmed:  # as quit does, asked first
            self.ask(
                f"The game is still on: if you leave, the server plays your seat{back}."
                f" {stand_in(self._variant())} Type y (or yes) to leave; anything else keeps you"
                " at the table.",
                "leave?",
                "You stay at the table.",
                lambda: self._do_leave(args, confirmed=True),
                applies=_game_on,
                gone="The game is over: leave? is no longer asked (leave now goes back to the"
                " lobby at once).",
            )
            return
        await self._leave()
        if seated and game_on:
            self.out.info(f"You left the game: the server plays your seat{back}.")
        self.out.info("You are back in the lobby. tables lists the tables.")

    async def _do_bot(self, args: str) -> None:
        assert self.table_id is not None
        policy = args.strip().lower() or "strong"
        request = lobby_service_pb2.AddBotRequest(table_id=self.table_id, policy=policy)
        await self.link.call(self.link.lobby.AddBot, request, token=self.token)

    async def _do_start(self, args: str, *, confirmed: bool = False) -> None:
        assert self.table_id is not None
        view = self.view
        players = list(view.players) if view is not None else []
        seats = len(players)
        empty = sum(1 for p in players if p.kind == game_pb2.SEAT_KIND_EMPTY)
        if empty and not confirmed and seats - empty >= 2:
            # For good: the game is played by the seats taken now, the others closed.
            self.ask(
                f"{empty} of {seats} seats {'is' if empty == 1 else 'are'} empty: "
                f"start now, with {seats - empty} players? The empty seats close for the "
                "game. Type y (or yes) to start; anything else waits for players.",
                "start now?",
                "Not started: the table waits for players.",
                lambda: self._do_start(args, confirmed=True),
                applies=lambda v: v.phase == game_pb2.PHASE_WAITING,
                gone="The game has begun: start now? is no longer asked.",
            )
            return
        request = lobby_service_pb2.StartTableRequest(table_id=self.table_id)
        await self.link.call(self.link.lobby.StartTable, request, token=self.token)

    async def _do_say(self, args: str) -> None:
        assert self.table_id is not None
        if not args:
            raise ValueError("say what? say good luck! writes to the table")
        request = table_service_pb2.ChatRequest(table_id=self.table_id, text=args)
        self._say_if_down(f"say {args}")
        await self._sent(
            f"say {args}", self.link.call(self.link.table.Chat, request, token=self.token)
        )

    def _say_if_down(self, what: str) -> None:
        """Before a call: while the connection is down it waits for it (the prompt with it),
        so say so, and for how long, rather than nothing."""
        if self.note:
            self.out.info(
                f"The connection is down: {what} waits for it, up to {CALL_WAIT:g} s; it is"
                " sent if the connection is back by then."
            )

    async def _sent(self, what: str, call: Awaitable[T]) -> T:
        """``call``'s answer; when none came within the call's wait, an error that says so of
        ``what`` (the command typed): that it was not sent, when the connection never came
        back while it waited; else that it may or may not have been made (the server may
        have made it and its answer not come back), so the table is to be looked at before
        it is typed again (it is not kept: the table may have moved on by then)."""
        try:
            return await call
        except NotSent as e:
            raise NotSent(f"{what} was not sent: {e}. Type it again once it is back") from None
        except Answered as e:  # its words say whether it was made
            raise Answered(f"{what}: {e}") from None
        except Unreachable as e:
            when = " once the connection is back" if self.note else ""
            raise Unreachable(
                f"no answer to {what} ({e}): it may or may not have been made. Look at the "
                f"table{when} before typing it again"
            ) from None

    async def _do_cancel(self, args: str) -> None:
        if self.stage.empty:
            self.out.info("Nothing is staged.")
            return
        self.out.info(f"Dropped {self.stage.describe(self.look.card_text)}.")
        self.stage = Stage()

    async def _do_undo(self, args: str) -> None:
        if self.stage.empty or not self._staged_before:
            self._staged_before = []
            variant = self._variant()
            if variant is not None and not variant.has_opening:
                self.out.info(
                    f"Nothing to undo: in {variant.id} every command is sent as it is typed,"
                    " and what was sent can't be undone."
                )
                return
            self.out.info(
                "Nothing is staged to undo: undo takes back a command staged and not yet sent"
                " (a draw discard waiting for its lay, a take waiting for its joker's place);"
                " what was sent can't be undone."
            )
            return
        self.stage, typed = self._staged_before.pop()
        rest = (
            f"still staged: {self.stage.describe()}."
            if not self.stage.empty
            else ("nothing is staged now.")
        )
        self.out.info(f"Undid {typed}; {rest}")

    async def _do_hint(self, args: str) -> None:
        assert self.table_id is not None and self.view is not None
        if self.note:
            # The hand as it is now: no use once the connection is back, if it ever comes.
            raise ValueError(
                "The connection is down: hint asks the server, so ask again once it is back"
            )
        request = table_service_pb2.AnalyseMyHandRequest(table_id=self.table_id)
        response = await self.link.call(self.link.table.AnalyseMyHand, request, token=self.token)
        view = view_from_proto(self.view)
        self.out.lines(hint_lines(response.analysis, view, self.look))

    async def _do_sort(self, args: str) -> None:
        word = args.strip().lower()
        if word not in ("", "suit", "rank"):
            raise ValueError("sort suit or sort rank")
        self.by_rank = (not self.by_rank) if not word else word == "rank"
        self._keep_sort()
        self.out.info(f"Your hand is sorted by {'rank' if self.by_rank else 'suit'}.")

    async def _do_scores(self, args: str) -> None:
        if self.view is None:
            self.out.info("The table has not arrived yet.")
            return
        results = [result_from_proto(r) for r in self.view.results]
        self.out.lines(score_sheet(results, seat_names(self.view), self._terminal().columns))

    async def _do_pile(self, args: str) -> None:
        if self.view is None:
            self.out.info("The table has not arrived yet.")
            return
        names = seat_names(self.view)
        self.out.lines(self.pile.lines(names, self.look, self.view.discard_size, self._room()))

    async def _do_table(self, args: str) -> None:
        if self.view is None:
            self.out.info("The table has not arrived yet.")
            return
        self.show_table()

    async def _do_save(self, args: str) -> None:
        assert self.table_id is not None
        if not args:
            raise ValueError("save where? save game.json")
        path = Path(save_path(args)).expanduser()
        request = table_service_pb2.ExportRecordRequest(table_id=self.table_id)
        # A long game's record takes the server seconds to write (tens for a million updates).
        response = await self.link.call(self.link.table.ExportRecord, request, timeout=120.0)
        replaced = " (it replaces the file that was there)" if path.is_file() else ""
        try:
            path.write_text(json.dumps(json.loads(response.record_json), indent=1) + "\n")
        except OSError as e:
            raise ValueError(f"could not write {path}: {e.strerror}") from None
        # As a shell takes it: the command can be pasted as it is.
        named = shlex.quote(str(path))
        if response.complete:
            self.out.info(
                f"Saved the whole game to {named}{replaced}. rami-client replay {named} steps "
                "through it."
            )
        else:
            self.out.info(
                f"Saved the game so far (still running) to {named}{replaced}. rami-client "
                "replay steps only through a finished game: save again once it is over."
            )

    async def _do_rematch(self, args: str) -> None:
        view = self.view
        assert view is not None and self.table_id is not None  # run only where the game is over
        old_id, me = self.table_id, my_seat(view)
        got = await self.link.call(
            self.link.lobby.GetTable, lobby_service_pb2.GetTableRequest(table_id=old_id)
        )
        # One rematch per game, whoever asks first: the server makes it once (rematch_of, with
        # this seat's token) and answers every later rematch of the game with that table.
        request = lobby_service_pb2.CreateTableRequest(
            name=rematch_name(got.table.name or self.table_name),
            variant=view.variant,
            options=view.options,
            private=got.table.private,
            rematch_of=old_id,
        )
        created = await self.link.call(self.link.lobby.CreateTable, request, token=self.token)
        new_id = created.table.table_id
        if created.rematch_made_before:
            await self._join_rematch(created.table)
            return
        bots = [p.policy for p in view.players if p.kind == game_pb2.SEAT_KIND_BOT]
        others = [
            safe(p.name, 24)
            for p in view.players
            if p.kind == game_pb2.SEAT_KIND_PLAYER and p.seat != me
        ]
        seated = (
            "you sit there at your seat"
            if not bots
            else "you sit there at your seat and its bot seat gets the same bot, where the seats"
            " are free"
            if len(bots) == 1
            else f"you sit there at your seat and its {len(bots)} bot seats get the same bots,"
            " where the seats are free"
        )
        self.out.info(f"Rematch: a new table {new_id} with the same game and options; {seated}.")
        told = ""
        if others:
            # The other players learn the new table from the old table's chat.
            # rematch, typed at this table, takes the seat held in this game there.
            chat = table_service_pb2.ChatRequest(
                table_id=old_id,
                text=f"Rematch at table {new_id}: type rematch (or join {new_id} from the lobby)"
                " to play again.",
            )
            try:
                await self.link.call(self.link.table.Chat, chat, token=self.token)
                told = "they were told its id in this table's chat"
            except Refused as e:
                told = (
                    f"they could not be told in the chat ({sentence(str(e))}): give them {new_id}"
                )
        await self._leave()
        await self.join(created.table, seat=me)
        for p in view.players:
            if p.kind != game_pb2.SEAT_KIND_BOT:
                continue
            # The same bot at the same seat, by the same name, where the seat is still free.
            bot = lobby_service_pb2.AddBotRequest(
                table_id=new_id, policy=p.policy or "strong", seat=p.seat, name=p.name
            )
            if not await self._seat_bot(bot):
                break
        begun = self.view is not None and self.view.phase != game_pb2.PHASE_WAITING
        if others and not begun:
            self.out.info(
                f"The game starts when {' and '.join(others)} "
                f"{'sits' if len(others) == 1 else 'sit'} down ({told}); start begins it with "
                "whoever is seated."
            )

    async def _seat_bot(self, bot: lobby_service_pb2.AddBotRequest) -> bool:
        """Seat a rematch's bot: at its seat by its name, or, refused either, without what
        was refused. False, saying so, when the table has no room for it any more (a player
        took the last seat, or the game began)."""
        for _ in range(3):
            try:
                await self.link.call(self.link.lobby.AddBot, bot, token=self.token)
                return True
            except Refused as e:
                if e.reason == "SEAT_TAKEN" and bot.HasField("seat"):
                    bot.ClearField("seat")
                elif e.reason in ("NAME_TAKEN", "BAD_NAME") and bot.name:
                    bot.name = ""
                elif e.reason in ("TABLE_FULL", "TABLE_STARTED"):
                    self.out.info(f"The rematch's {bot.policy} bot has no seat: {sentence(str(e))}")
                    return False
                else:
                    raise
        return False

    async def _join_rematch(self, table: lobby_service_pb2.TableInfo) -> None:
        """Sit at the rematch another player of this game made, or say why not (staying at
        this table)."""
        new_id = safe(table.table_id, 32)
        if table.status == lobby_service_pb2.TABLE_STATUS_CLOSED:
            raise ValueError(
                f"the rematch of this game, table {new_id}, was closed before it began: create "
                "starts a new table"
            )
        if table.status != lobby_service_pb2.TABLE_STATUS_WAITING:
            raise ValueError(
                f"the rematch of this game, table {new_id}, has started without you: "
                f"watch {new_id} follows it"
            )
        if not joinable(table):
            raise ValueError(
                f"the rematch of this game, table {new_id}, has no free seat: watch {new_id} "
                "follows it once it starts"
            )
        self.out.info(
            f"Rematch: another player of this game made table {new_id} for it; you take a "
            "seat there."
        )
        await self.join(table, seat=my_seat(self.view) if self.view is not None else None)

    # -- the lobby ---------------------------------------------------------------------------

    def _held_here(self) -> set[str]:
        """The ids of the tables of this server where this client holds a seat."""
        return {s.table_id for s in self.seats.at(self.link.target)} if self.seats else set()

    async def _do_tables(self, args: str) -> None:
        word = args.strip().lower()
        if word not in ("", "all"):
            raise ValueError(f"tables takes nothing or all, not {args.strip()!r}")
        await self.finder.show(everything=word == "all")

    async def _say_seats_listed(self, listed: list[lobby_service_pb2.TableInfo]) -> None:
        """After a list of the tables: the seats this client holds, at the tables listed and
        at those the list leaves out (private ones, or games over)."""
        held = self._held_here()
        for t in await self._held_unlisted(listed):
            saved = self._saved(t)
            if saved is None:
                continue
            where = f"the private table {t.table_id} ({safe(t.name, 40)})"
            if t.status == lobby_service_pb2.TABLE_STATUS_FINISHED:
                self._note_rematch(t, saved.seat)
                self.out.info(
                    f"The game at {where}, where you held seat {saved.seat}, ended while you"
                    f" were away: join {t.table_id} tells how{_its_rematch(t)}."
                )
            else:
                self.out.info(
                    f"You hold seat {saved.seat} at {where}: join {t.table_id} takes it back."
                )
        for i, t in enumerate(listed, 1):
            saved = self._saved(t) if t.table_id in held else None
            if saved is None:
                continue
            if t.status == lobby_service_pb2.TABLE_STATUS_FINISHED:
                self._note_rematch(t, saved.seat)
                self.out.info(
                    f"The game at table {i}, where you held seat {saved.seat}, ended while you"
                    f" were away: join {i} tells how{_its_rematch(t)}."
                )
            else:
                self.out.info(f"You hold seat {saved.seat} at table {i}: join {i} takes it back.")

    def _note_rematch(self, table: lobby_service_pb2.TableInfo, seat: int) -> None:
        if table.rematch_table_id and len(self._rematch_seats) < 100:
            self._rematch_seats[table.rematch_table_id] = seat

    async def _do_name(self, args: str) -> None:
        if not args:
            self.out.info(f"You join tables as {self.name}.")
            return
        name = safe(args)
        if not any(ch.isalnum() for ch in name):
            self.out.error(f"A name needs a letter or a digit; you join tables as {self.name}.")
            return
        self.name = name[:NAME_CELLS].rstrip()
        shortened = (
            f"Names are at most {NAME_CELLS} characters: you" if name != self.name else "You"
        )
        self.out.info(f"{shortened} will join tables as {self.name}.")

    async def _do_join(self, args: str) -> None:
        if args:
            found = await self.finder.resolve(args.split()[0])
            if found is None:
                return
            table = found
            if (
                table.status == lobby_service_pb2.TABLE_STATUS_FINISHED
                and self._saved(table) is None
            ):
                name = args.split()[0]
                raise ValueError(f"the game at that table is over: watch {name} shows how it ended")
        else:
            # A seat of one's own comes first, then the newest table with a free seat: taken
            # at once (the list is shown only when there is none to take).
            listed = await self.finder.listed()
            mine = [
                t
                for t in listed
                if t.status != lobby_service_pb2.TABLE_STATUS_FINISHED
                and self._saved(t) is not None
            ]
            mine += [
                t
                for t in await self._held_unlisted(listed)
                if t.status != lobby_service_pb2.TABLE_STATUS_FINISHED
            ]
            free = [t for t in listed if joinable(t)]
            if not (listed or mine):
                raise ValueError("no tables yet: create tallage bots=3 starts one with bots")
            if not (mine or free):
                await self._do_tables("")
                raise ValueError(
                    "no table has a free seat: create tallage bots=3 starts one"
                    + self._seats_elsewhere_note(None)
                )
            table = (mine or free)[0]
        try:
            await self.join(table, seat=self._rematch_seats.get(table.table_id))
        except Refused as e:
            if e.reason != "TABLE_STARTED":
                raise
            # The list was older than the table: its game began meanwhile.
            name = args.split()[0] if args else table.table_id
            raise ValueError(
                f"the game at that table has begun: no seat can be taken. watch {name} follows it"
                + self._seats_elsewhere_note(table.table_id)
            ) from None

    def _seats_elsewhere_note(self, table_id: str | None) -> str:
        """Why a seat held at ``table_id`` (None: at any table) is not taken back here, when
        another running client of the profile keeps it; else nothing."""
        book = self.seats_elsewhere
        if book is None:
            return ""
        held = book.at(self.link.target)
        if table_id is not None:
            held = [s for s in held if s.table_id == table_id]
        if not held:
            return ""
        which, it = ("Your seat there is", "it") if table_id else ("Your seats here are", "them")
        return (
            f". {which} kept by the other rami-client of the profile {book.profile!r}: take"
            f" {it} back there, or close that one first"
        )

    async def join(self, table: lobby_service_pb2.TableInfo, seat: int | None = None) -> None:
        """Take a seat at ``table`` (or take back the one held there) and follow it: ``seat``
        if it is free (a rematch's player keeps the game's seat), else the first free one."""
        saved = self._saved(table)
        if saved is not None:
            self.out.line(
                [("class:good", f"You take seat {saved.seat} back: "), ("", table_summary(table))]
            )
            missed = table.number - saved.seen if saved.seen else 0
            # A seat left (away) comes back with an update of its own as the stream opens:
            # the catching up ends with it, so that it is told before the table as it is. It
            # may come some updates after the number listed: the table goes on meanwhile.
            self._returning = (
                missed > 0
                and table.status == lobby_service_pb2.TABLE_STATUS_PLAYING
                and saved.seat < len(table.seats)
                and table.seats[saved.seat].away
            )
            if missed > 2 * TOLD_IN_FULL:
                self.out.info(
                    f"While you were away ({plural(missed, 'update')}; the moves of the last"
                    f" {TOLD_IN_FULL} are told, before them the server's for you, the rounds,"
                    " the stock's rebuilds, the chat and the players):"
                )
                self._catching_up = table.number
                self._brief_until = table.number - TOLD_IN_FULL
            elif missed > 0:
                self.out.info(f"While you were away ({plural(missed, 'update')}):")
                self._catching_up = table.number
            await self._watch_table(
                table.table_id,
                saved.token,
                table.name,
                after=saved.seen if missed > 0 else None,
                history=table.number,
            )
            return
        # 32 bytes of this client's own randomness go into every deal (docs/records.md).
        request = lobby_service_pb2.JoinTableRequest(
            table_id=table.table_id, name=self.name, entropy=secrets.token_bytes(32), seat=seat
        )
        try:
            joined = await self.link.call(self.link.lobby.JoinTable, request)
        except Refused as e:
            if seat is None or e.reason != "SEAT_TAKEN":
                raise
            request.ClearField("seat")  # taken meanwhile: the first free one
            joined = await self.link.call(self.link.lobby.JoinTable, request)
        if self.seats is not None:
            self.seats.save(
                SavedSeat(self.link.target, table.table_id, joined.seat, joined.token, table.name)
            )
            self._seat_book_problem()
        self.out.line(
            [("class:good", f"You sit at seat {joined.seat}: "), ("", table_summary(joined.table))]
        )
        # The join's own update told, and every one after it: the start and the deal that the
        # join makes of a full table are in it (the stream opens after them).
        await self._watch_table(
            table.table_id, joined.token, table.name, history=joined.table.number - 1
        )

    async def _held_unlisted(
        self, listed: list[lobby_service_pb2.TableInfo]
    ) -> list[lobby_service_pb2.TableInfo]:
        """The tables, not in ``listed`` (private ones), where a seat is written down: asked
        for by their ids, those waiting, playing or finished (a finished game's seat is
        forgotten once its end is shown, as at a listed table). The seat of a table the
        server no longer has is forgotten; one that can't be asked now is left for later."""
        ids = {t.table_id for t in listed}
        found = []
        for table_id in sorted(self._held_here() - ids):
            try:
                got = await self.link.call(
                    self.link.lobby.GetTable, lobby_service_pb2.GetTableRequest(table_id=table_id)
                )
            except Refused as e:
                if e.reason == "NO_SUCH_TABLE" and self.seats is not None:
                    self.seats.forget(self.link.target, table_id)
                continue
            except LinkError:
                continue
            if got.table.status in (
                lobby_service_pb2.TABLE_STATUS_WAITING,
                lobby_service_pb2.TABLE_STATUS_PLAYING,
                lobby_service_pb2.TABLE_STATUS_FINISHED,
            ):
                found.append(got.table)
        return found

    def _saved(self, table: lobby_service_pb2.TableInfo) -> SavedSeat | None:
        """The seat written down at ``table``: one to take back, or, its game over, one whose
        player has not seen the end yet (forgotten once it is shown)."""
        if self.seats is None:
            return None
        return self.seats.find(self.link.target, table.table_id)

    def _forget_seat(self) -> None:
        if self.seats is not None and self.token is not None and self.table_id is not None:
            self.seats.forget(self.link.target, self.table_id)
            self._seat_book_problem()

    def _seat_book_problem(self) -> None:
        """Say once that seats can't be written down (the client plays on without them)."""
        if self.seats is not None and self.seats.problem:
            self.out.warn(f"Seats will not be kept for next time: {self.seats.problem}.")
            self.seats = None

    async def _do_watch(self, args: str) -> None:
        if not args:
            raise ValueError("watch which table? watch 2, or its id (tables lists them)")
        table = await self.finder.resolve(args.split()[0])
        if table is None:
            return
        self.out.line([("class:good", "Watching "), ("", table_summary(table))])
        await self._watch_table(table.table_id, None, table.name, history=table.number)

    async def _do_create(self, args: str) -> None:
        spec = parse_create(args)
        if "turn_seconds" not in spec.options:
            # Nobody waits for ever on a player who is away from the keyboard.
            spec = replace(spec, options={**spec.options, "turn_seconds": DEFAULT_TURN_SECONDS})
        await self.create(spec)

    async def create(self, spec: NewTable) -> None:
        """Create a table, sit at it, seat the bots (the game starts when it is full)."""
        request = lobby_service_pb2.CreateTableRequest(
            name=spec.name or f"{self.name}'s {spec.variant}",
            variant=VARIANT_IDS[spec.variant],
            options=options_to_proto(spec.options),
            private=spec.private,
        )
        created = await self.link.call(self.link.lobby.CreateTable, request)
        try:
            await self.join(created.table)
        except LinkError as e:
            # Nobody sits at it, and nobody would: closed again, not left waiting an hour.
            close = lobby_service_pb2.CloseTableRequest(table_id=created.table.table_id)
            try:
                await self.link.call(self.link.lobby.CloseTable, close, token=created.owner_token)
            except LinkError:
                raise e from None
            raise LinkError(f"{sentence(str(e))} The table made for it is closed again.") from e
        if spec.private:
            # Not listed, it has no number or short id to give: only its whole id finds it.
            self.out.info(
                "This table is private: it is not listed. The other players join it with "
                f"join {safe(created.table.table_id, 32)} (its whole id)."
            )
        for _ in range(spec.bots):
            bot = lobby_service_pb2.AddBotRequest(
                table_id=created.table.table_id, policy=spec.policy
            )
            await self.link.call(self.link.lobby.AddBot, bot, token=self.token)

    # -- help and quit -----------------------------------------------------------------------

    def _print_help(self, args: str) -> None:
        columns = self._terminal().columns
        # Lines made to fit ``columns``, or broken by the printer: their rows line up (a
        # resized window breaks them again to its width).
        lines = help_lines(args.strip(), self.where, self._variant(), columns, self._room())
        self.out.lines(lines, hang=0)

    async def _do_help(self, args: str) -> None:
        self._print_help(args)

    async def _do_quit(self, args: str) -> None:
        view = self.view
        if self.where == PLAYING and view is not None:  # a game under way (not over)
            if self.local:
                then = "the game ends with the client"
            elif self.seats is not None:
                then = (
                    "the server plays your seat until you take it back (rami-client connect, "
                    "then join)"
                )
            else:
                then = "the server plays your seat from now on"
            does = "" if self.local else f" {stand_in(self._variant())}"
            self.ask(
                f"The game is still on: if you quit, {then}.{does} Type y (or yes) to quit"
                " (Ctrl-D quits too); anything else keeps you at the table.",
                "quit?",
                "You stay at the table.",
                self._quit,
                applies=_game_on,
                gone="The game is over: quit? is no longer asked (quit now quits at once).",
            )
            return
        await self._quit()

    async def _quit(self) -> None:
        self.done = True

    async def _end_of_input(self) -> bool:
        """Ctrl-D: quit as ``quit`` does. During a game it asks first; a second Ctrl-D (or
        yes) quits."""
        question, self._question = self._question, None
        if question is not None:
            if question.yes == self._quit:
                return True
            self.out.info(question.no)  # another question: Ctrl-D is no to it
        await self._do_quit("")
        return self.done or self._question is None


def _game_on(view: game_pb2.View) -> bool:
    """Whether a game is under way at the table (neither waiting for players nor over)."""
    return view.phase not in (game_pb2.PHASE_WAITING, game_pb2.PHASE_GAME_OVER)


def save_path(args: str) -> str:
    """The file ``save`` names: the rest of the line as typed, or one name in quotes (as a
    shell reads it). ValueError for quotes left open, or more than one quoted name."""
    if args[0] not in "'\"":
        return args
    try:
        words = shlex.split(args)
    except ValueError:
        raise ValueError(f'a quote is left open in {args}: save "my game.json"') from None
    if len(words) != 1:
        raise ValueError(f"one file to save, not {len(words)}: quote a name with spaces")
    return words[0]


def rematch_name(name: str) -> str:
    """The name of a rematch's table: the old one with " (rematch)", cut to fit the server's
    40 characters (the old name gives way; a longer one is refused, never cut)."""
    if name.endswith(" (rematch)"):
        return name
    return f"{name[: MAX_TABLE_NAME - len(' (rematch)')].rstrip()} (rematch)"


def _height(fragments: StyleAndTextTuples) -> int:
    """The rows that styled text broken into lines takes."""
    return 1 + sum(text.count("\n") for _, text, *_ in fragments)


#: How far back a game under way is read when a client starts following it (resuming within
#: 256 updates of the latest is never limited by the server): the throws the pile shows.
QUIET_HISTORY = 160
#: Seconds before the player's turn clock runs out when they are told so in words.
CLOCK_WARNING = 10
#: Taking a seat back after more than twice this many updates, the moves of only the last
#: this many are told one by one.
TOLD_IN_FULL = 12
#: The events of moves (``Event.kind``), left untold before those.
_MOVE_EVENTS = frozenset(("card_drawn", "cards_laid", "card_discarded", "turn_timed_out"))
