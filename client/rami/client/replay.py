"""``rami-client replay``: step through a game record, forwards and backwards.

A record (docs/records.md) is checked and replayed by the engine
(:func:`rami.engine.record.replay_record`); the game is then played again from its deals,
keeping one :class:`Frame` per action — what happened, in the narrator's sentences, and the
table after it with every hand face up (a complete record conceals nothing).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prompt_toolkit.application import Application, get_app
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.layout import HSplit, Layout, Window
from prompt_toolkit.layout.controls import FormattedTextControl

from rami.engine import Card, Game, Phase, View, view
from rami.engine.record import RecordError, replay_record

from .cardtext import hand_fragments, meld_fragments
from .look import STYLE, Look
from .narrate import Scene, narrate
from .printer import wrapped
from .safetext import cells, ljust, safe

__all__ = [
    "Frame",
    "Replay",
    "ReplayError",
    "Viewer",
    "frame_fragments",
    "load_frames",
    "replay_frames",
    "run_viewer",
    "wrapped_frame",
]


class ReplayError(ValueError):
    """A file that is not a record this client can replay, said in plain words."""


@dataclass(frozen=True, slots=True)
class Frame:
    """The table after one step of the game, and what the step was."""

    caption: tuple[StyleAndTextTuples, ...]
    view: View
    hands: tuple[tuple[Card, ...], ...]


@dataclass(frozen=True, slots=True)
class Replay:
    """A whole game, frame by frame."""

    title: str
    names: tuple[str, ...]
    frames: tuple[Frame, ...]

    def round_starts(self) -> list[int]:
        """The index of each round's first frame."""
        out: list[int] = []
        last = -1
        for i, f in enumerate(self.frames):
            if f.view.round != last:
                out.append(i)
                last = f.view.round
        return out


def _frame(
    game: Game,
    events: Sequence[Any],
    names: tuple[str, ...],
    look: Look,
    melds_before: dict[int, Any],
) -> Frame:
    scene = Scene(
        names,
        look,
        None,
        melds_before,
        game.drawn,
        len(game.results),
        True,
        game.variant,
        game.options.jokers_per_meld,
    )
    caption = tuple(line for e in events for line in narrate(e, scene))
    return Frame(caption, view(game, None), tuple(tuple(h) for h in game.hands))


def replay_frames(doc: dict[str, Any], look: Look) -> Replay:
    """Every frame of a record's game; raises :class:`ReplayError` for a bad record."""
    try:
        final = replay_record(doc)
        names = tuple(
            safe(str(p.get("name", "")), 24) or f"Seat {p.get('seat')}" for p in doc["players"]
        )
    except (RecordError, KeyError, TypeError, ValueError) as e:
        raise ReplayError(f"this record can't be replayed: {e}") from None
    game, events = Game.new(
        final.variant,
        final.options,
        final.seed,
        decks=final.decks,
        round_seeds=final.round_seeds,
        turn_cap=final.turn_cap,
    )
    frames = [_frame(game, events, names, look, {})]
    for seat, action in final.log:
        before = {i: tm.meld for i, tm in enumerate(game.melds, 1)}
        events = game.apply(seat, action)
        frames.append(_frame(game, events, names, look, before))
    title = safe(str(doc.get("name", "")), 40) or final.variant.title
    return Replay(title, names, tuple(frames))


def load_frames(path: Path, look: Look | None = None) -> Replay:
    """The frames of the record in ``path``."""
    try:
        doc = json.loads(path.read_text())
    except OSError as e:
        raise ReplayError(f"can't read {path}: {e.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ReplayError(f"{path} is not a game record (not JSON: {e})") from None
    if not isinstance(doc, dict) or not str(doc.get("format", "")).startswith("rami-record/"):
        raise ReplayError(f"{path} is not a Rami game record (docs/records.md)")
    if not doc.get("complete"):
        raise ReplayError(
            f"{path} holds a game still being played: save it again once the game is over"
        )
    return replay_frames(doc, look or Look())


def frame_fragments(replay: Replay, index: int, look: Look) -> StyleAndTextTuples:
    """One frame as text: where we are, what happened, the table and every hand."""
    frame = replay.frames[index]
    v = frame.view
    b = look.bullet
    out: StyleAndTextTuples = [
        (
            "class:heading",
            f"{replay.title}{b}round {v.round}{b}step {index} of {len(replay.frames) - 1}",
        ),
        ("", "\n"),
    ]
    for line in frame.caption:
        out += [("", "  "), *line, ("", "\n")]
    out.append(("", "\n"))
    for number, tm in enumerate(v.melds, 1):
        out += [
            ("class:label", f"  [{number}] "),
            ("class:dim", f"{replay.names[tm.owner]}: "),
            *meld_fragments(tm.meld, look),
            ("", "\n"),
        ]
    # None: the pile is empty, or its top lies face down (a declaration's card).
    top = v.discard_top
    pile = f"discard {look.card_text(top)}" if top is not None else "no discard showing"
    out.append(("class:dim", f"  {pile}{b}stock {v.stock_size}"))
    if v.variant.has_opening:
        out.append(("class:dim", f"{b}bar {v.bar}"))
    out.append(("", "\n\n"))
    width = max(cells(n) for n in replay.names)
    moving = v.phase in (Phase.DRAW, Phase.PLAY)
    for seat, name in enumerate(replay.names):
        arrow = look.arrow if moving and seat == v.turn else " "
        out += [
            ("class:turn", f"  {arrow} "),
            ("", f"{ljust(name, width)}  "),
            ("class:dim", f"{v.totals[seat]:>4} pts  "),
            *hand_fragments(frame.hands[seat], look),
            ("", "\n"),
        ]
    return out


#: q first: a narrow window cuts the line at its end, and how to leave must show.
_FOOTER = "q: quit   left/right: step   PgUp/PgDn: round   Home/End: first/last"


def wrapped_frame(
    replay: Replay, index: int, look: Look, columns: int, rows: int | None = None
) -> StyleAndTextTuples:
    """:func:`frame_fragments` broken between words to fit ``columns`` columns (the window
    would break its lines anywhere, inside a word too); with ``rows``, cut to that many rows,
    the last one saying how many more there are (the window would cut them without a word; a
    taller window shows them)."""
    lines = wrapped(frame_fragments(replay, index, look), max(20, columns - 1))
    while lines and not "".join(text for _, text, *_ in lines[-1]).strip():
        lines.pop()  # the frame's last newline
    if rows is not None and len(lines) > rows:
        kept = max(0, rows - 1)
        more = len(lines) - kept
        lines = [*lines[:kept], [("class:dim", f"… {more} more lines")]]
    out: StyleAndTextTuples = []
    for i, row in enumerate(lines):
        if i:
            out.append(("", "\n"))
        out += row
    return out


class Viewer:
    """The replay on screen: one frame at a time, keys to move."""

    def __init__(self, replay: Replay, look: Look) -> None:
        self.replay = replay
        self.look = look
        self.index = 0

    def go(self, index: int) -> None:
        """Show frame ``index`` (kept within the game)."""
        self.index = max(0, min(index, len(self.replay.frames) - 1))

    def next_round(self, step: int) -> None:
        """Jump to the next (``step`` 1) or this/previous (-1) round's first frame."""
        starts = self.replay.round_starts()
        if step > 0:
            later = [s for s in starts if s > self.index]
            self.go(later[0] if later else len(self.replay.frames) - 1)
        else:
            earlier = [s for s in starts if s < self.index]
            self.go(earlier[-1] if earlier else 0)

    def application(self) -> Application[None]:
        """The prompt-toolkit application that shows the frames."""

        def shown() -> StyleAndTextTuples:
            size = get_app().output.get_size()
            # The rows above the footer's one.
            return wrapped_frame(self.replay, self.index, self.look, size.columns, size.rows - 1)

        body = Window(FormattedTextControl(shown), wrap_lines=True)
        footer = Window(
            FormattedTextControl([("class:bottom-toolbar", _FOOTER)]),
            height=1,
            style="class:bottom-toolbar",
        )
        return Application(
            layout=Layout(HSplit([body, footer])),
            key_bindings=self._keys(),
            style=STYLE,
            full_screen=True,
            color_depth=self.look.color_depth,
            include_default_pygments_style=False,
        )

    def _keys(self) -> KeyBindings:
        kb = KeyBindings()

        @kb.add("right")
        @kb.add("space")
        @kb.add("n")
        def _next(event: KeyPressEvent) -> None:
            """Right, space or n: one step forwards."""
            self.go(self.index + 1)

        @kb.add("left")
        @kb.add("p")
        @kb.add("b")
        def _back(event: KeyPressEvent) -> None:
            """Left, p or b: one step back."""
            self.go(self.index - 1)

        @kb.add("pagedown")
        @kb.add("N")
        def _round_on(event: KeyPressEvent) -> None:
            """PgDn or N: the start of the next round."""
            self.next_round(1)

        @kb.add("pageup")
        @kb.add("P")
        def _round_back(event: KeyPressEvent) -> None:
            """PgUp or P: the start of this round, or of the one before."""
            self.next_round(-1)

        @kb.add("home")
        @kb.add("g")
        def _first(event: KeyPressEvent) -> None:
            """Home or g: the deal of the first round."""
            self.go(0)

        @kb.add("end")
        @kb.add("G")
        def _last(event: KeyPressEvent) -> None:
            """End or G: the end of the game."""
            self.go(len(self.replay.frames) - 1)

        @kb.add("q")
        @kb.add("escape")
        @kb.add("c-c")
        @kb.add("c-d")
        def _quit(event: KeyPressEvent) -> None:
            """q, Escape, Ctrl-C or Ctrl-D: leave the replay."""
            event.app.exit()

        return kb


async def run_viewer(replay: Replay, look: Look) -> None:
    """Show ``replay`` until the person quits."""
    await Viewer(replay, look).application().run_async()
