"""The live table as the person sees it: the panel above the prompt and the bottom toolbar.

The panel holds what a player looks at all the time — the melds on the table, numbered, with
their owners, and the hand, sorted and coloured. The toolbar holds whose turn it is and the
clock, then the table's facts (round, bar, stock, discard) and every player's hand size, score
and whether they have opened. Both are pure functions of a proto ``View``.
"""

from __future__ import annotations

import re
import time
import unicodedata

from prompt_toolkit.formatted_text import StyleAndTextTuples

from rami.v1 import game_pb2

from .cardtext import card_fragments, cards_fragments, hand_groups, meld_fragments
from .convert import card, cards, meld_from_proto, result_from_proto, variant_id, variant_of
from .look import Look
from .pile import Pile
from .safetext import cells, clip, ljust, safe
from .scores import ending_note, listed

__all__ = [
    "VARIANT_TITLES",
    "clock_text",
    "discard_lay",
    "discard_withheld",
    "i_opened",
    "menu_rows",
    "my_seat",
    "panel_fragments",
    "plural",
    "prompt_fragments",
    "seat_names",
    "toolbar_fragments",
    "turn_fragments",
    "your_turn_fragments",
]

VARIANT_TITLES = {"portuguese": "Portuguese Rami", "tallage": "Tallage", "simple": "Simple"}
_LABEL = 9  # width of the panel's labels ("Table", "Hand", "Watching")
_SHORT_LABEL = 6  # the same in a small window


def small(width: int, rows: int) -> bool:
    """A window where the panel and toolbar write less, so the events keep some room."""
    return width < 70 or rows < 20


def menu_rows(rows: int, view: game_pb2.View | None = None) -> int:
    """The rows kept free under the prompt for the completion menu: none in a small window,
    so the panel, the toolbar and the last events fit, nor once the game is over, so its last
    events and the result stay in view; at most 8 in a tall one."""
    if view is not None and view.phase == game_pb2.PHASE_GAME_OVER:
        return 0
    return max(0, min(8, (rows - 16) // 2))


def _table_room(rows: int) -> int:
    """The most lines the melds take in the panel: the events above need room too."""
    return max(1, (rows - 12) // 2)


def plural(count: int, noun: str) -> str:
    """``1 card``, ``2 cards``."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def my_seat(view: game_pb2.View) -> int | None:
    """The watcher's seat, or None for a spectator."""
    return view.seat if view.HasField("seat") else None


#: The most a player's name takes where it is shown (its seat's mark included).
NAME_CELLS = 24


def seat_names(view: game_pb2.View, me: str = "You") -> list[str]:
    """Every seat's name as shown (cleaned), the watcher's own as ``me``; a name that
    another seat shows too (players choose their names: two may choose one, or the client's
    word for its own player) is told apart by its seat, "Ana (seat 2)"."""
    mine = my_seat(view)
    out = []
    for p in view.players:
        if p.seat == mine:
            out.append(me)
        elif p.kind == game_pb2.SEAT_KIND_EMPTY:
            out.append("(empty)")
        else:
            out.append(safe(p.name, NAME_CELLS) or f"Seat {p.seat}")
    marked: set[int] = set()
    while True:  # a mark may make a name another seat has ("Ana (seat 1)"): again, then
        folded = [unicodedata.normalize("NFKC", name).casefold() for name in out]
        clash = [
            i
            for i, p in enumerate(view.players)
            if i not in marked
            and p.seat != mine
            and p.kind != game_pb2.SEAT_KIND_EMPTY
            and folded.count(folded[i]) > 1
        ]
        if not clash:
            return out
        for i in clash:
            mark = f" (seat {view.players[i].seat})"
            out[i] = out[i][: NAME_CELLS - len(mark)].rstrip() + mark
            marked.add(i)


def _possessive(name: str) -> str:
    return "Your" if name == "You" else f"{name}'s"


def _is_my_turn(view: game_pb2.View) -> bool:
    return my_seat(view) == view.turn and view.phase in (game_pb2.PHASE_DRAW, game_pb2.PHASE_PLAY)


def clock_text(view: game_pb2.View, now: float, look: Look) -> str:
    """Time left for the player to move (``⏱ 0:42``), or "" without a clock."""
    if not view.HasField("turn_deadline") or view.phase not in (
        game_pb2.PHASE_DRAW,
        game_pb2.PHASE_PLAY,
    ):
        return ""
    left = max(0, int(view.turn_deadline.ToNanoseconds() / 1e9 - now + 0.999))
    sign = "clock" if look.ascii else "⏱"
    return f"{sign} {left // 60}:{left % 60:02d}"


def _my_draw(view: game_pb2.View, look: Look) -> StyleAndTextTuples:
    out: StyleAndTextTuples = [("class:bottom-toolbar.mine", "draw stock")]
    rules = variant_of(view.variant)
    top = card(view.discard_top)
    if game_pb2.DRAW_SOURCE_DISCARD in view.draw_sources and top is not None:
        out += [("", " or "), ("class:bottom-toolbar.mine", "draw discard"), ("", " (")]
        out += card_fragments(top, look)
        out.append(("", ")"))
        if rules is not None and rules.must_lay_discard:
            out.append(("", " to lay it at once"))
    else:
        why = _stock_only(view, look)
        if why:
            out.append(("", f" ({why})"))
    return out


def discard_withheld(view: game_pb2.View) -> str:
    """Why the rules keep the discard from the seat drawing now, as the view tells it:
    ``empty``, ``first_circuit``, ``one_card`` (moroccan draws), ``lay_at_once`` (tallage: the
    view offers the discard only when a lay this turn can take it), or "" (no rule the view
    tells)."""
    rules = variant_of(view.variant)
    if card(view.discard_top) is None:
        return "empty"
    if rules is None:
        return ""
    if rules.moroccan_draw_rules:
        if view.first_circuit:
            return "first_circuit"
        if len(view.hand) == 1:
            return "one_card"
    return "lay_at_once" if rules.must_lay_discard else ""


def _stock_only(view: game_pb2.View, look: Look) -> str:
    """Why the discard is not offered to the player drawing now, in a few words ("" when
    there is no discard to take, or nothing to say)."""
    top = card(view.discard_top)
    return {
        "first_circuit": "nobody takes the discard in the first circuit",
        "one_card": "holding one card, you draw from the stock",
        "lay_at_once": (
            f"{look.card_text(top)} only if laid at once: no {discard_lay(view)} uses it"
            if top is not None
            else ""
        ),
    }.get(discard_withheld(view), "")


def opening_need(view: game_pb2.View) -> int:
    """The least an opening is worth now: the option's, and more than the bar."""
    return max(view.options.opening, view.bar + 1)


def i_opened(view: game_pb2.View) -> bool:
    """Whether the watcher's seat has laid this round (a spectator: no)."""
    seat = my_seat(view)
    return seat is not None and seat < len(view.players) and view.players[seat].opened


def discard_lay(view: game_pb2.View) -> str:
    """The lay a tallage discard is taken with now, in words: ``lay of yours`` once the seat
    has opened, else ``opening of 80+`` (what an opening needs now)."""
    return "lay of yours" if i_opened(view) else f"opening of {opening_need(view)}+"


def play_hint(view: game_pb2.View) -> str:
    """What the seat to play may do now, after its draw (or the dealer's first turn)."""
    rules = variant_of(view.variant)
    if rules is not None and rules.declares:
        return "discard CARD, or declare CARD (the card you put face down)"
    if len(view.hand) == 1:  # all the others laid: a whole-hand finish, or a Rami
        return "discard your last card to go out"
    if rules is not None and rules.lays_whole_hand:
        return "finish (lay all but one card) if you can, then discard"
    if not view.can_lay:
        return "discard a card"
    if i_opened(view):
        return "lay, add or take back jokers if you like, then discard"
    return f"open with melds worth {opening_need(view)} or more if you can, then discard"


def your_turn_fragments(view: game_pb2.View, look: Look) -> StyleAndTextTuples:
    """The seat's turn as it stands, told when it comes: to draw; or drawn already (a seat
    taken back in the middle of its turn), what is left to do; or the dealer's first turn,
    played without a draw."""
    turn = ("class:turn", "It's your turn: ")
    if view.phase == game_pb2.PHASE_DRAW:
        text: StyleAndTextTuples = [turn, ("", "take a card with draw stock")]
        top = card(view.discard_top)
        if game_pb2.DRAW_SOURCE_DISCARD in view.draw_sources and top is not None:
            text += [("", ", or draw discard to take "), *cards_fragments([top], look)]
        return [*text, ("", ".")]
    if (drawn := card(view.drawn)) is not None:
        return [
            turn,
            ("", "you drew "),
            *cards_fragments([drawn], look),
            ("", f" this turn: {play_hint(view)}."),
        ]
    return [turn, ("", f"you play first with {len(view.hand)} cards, without drawing.")]


def turn_fragments(
    view: game_pb2.View, look: Look, staged: bool = False, joker: bool = False
) -> StyleAndTextTuples:
    """Whose turn it is and what they are doing, in words (``staged``: a move waits for its
    lay, as a draw from the discard does; ``joker``: a joker taken back waits for its place)."""
    names = seat_names(view)
    phase = view.phase
    if phase == game_pb2.PHASE_WAITING:
        taken = sum(1 for p in view.players if p.kind != game_pb2.SEAT_KIND_EMPTY)
        text = f"Waiting for players: {taken} of {len(view.players)} seats taken"
        if my_seat(view) is not None:
            text += " (bot adds a bot, start starts now)"
        return [("class:bottom-toolbar.turn", text)]
    if phase == game_pb2.PHASE_ROUND_OVER:
        return [("class:bottom-toolbar.turn", f"Round {view.round} is over: the next deal follows")]
    if phase == game_pb2.PHASE_GAME_OVER:
        winners = listed([names[w] for w in view.winners]) if view.winners else "nobody"
        alone_me = list(view.winners) == [my_seat(view)]
        verb = "win" if alone_me or len(view.winners) > 1 else "wins"
        return [("class:bottom-toolbar.turn", f"Game over: {winners} {verb}")]
    if _is_my_turn(view):
        head: StyleAndTextTuples = [("class:bottom-toolbar.mine", "Your turn: ")]
        top = card(view.discard_top)
        if phase == game_pb2.PHASE_DRAW and staged and top is not None:
            uses = [("", "now type the lay that uses "), *card_fragments(top, look)]
            return [*head, *uses, ("", " (cancel drops it)")]
        if phase == game_pb2.PHASE_DRAW:
            return head + _my_draw(view, look)
        if joker:
            where = "now say where the joker goes: add 3 JK, or lay it in a meld (cancel drops it)"
            return [*head, ("", where)]
        return [*head, ("", play_hint(view))]
    doing = "taking a card" if phase == game_pb2.PHASE_DRAW else "playing"
    name = names[view.turn] if view.turn < len(names) else f"Seat {view.turn}"
    return [("class:bottom-toolbar.turn", f"{_possessive(name)} turn"), ("", f" ({doing})")]


def _facts(view: game_pb2.View, look: Look, short: bool = False) -> list[StyleAndTextTuples]:
    """The table's facts, one item each: game, round, bar, target, stock, discard (fewer
    words when ``short``)."""
    variant = variant_id(view.variant)
    rules = variant_of(view.variant)
    title = VARIANT_TITLES.get(variant, variant)
    items: list[StyleAndTextTuples] = [[("", title.split()[0] if short else title)]]
    if view.round:
        rounds = rules is not None and rules.game_end == "rounds"
        of = (
            (f"/{view.options.rounds}" if short else f" of {view.options.rounds}") if rounds else ""
        )
        items.append([("", f"round {view.round}{of}")])
    moving = view.phase in (game_pb2.PHASE_DRAW, game_pb2.PHASE_PLAY)
    if rules is not None and rules.has_opening and view.phase != game_pb2.PHASE_GAME_OVER:
        # What an opening needs now (the option's least, and more than the bar): the number
        # the turn's line asks for, not the option's alone beside a higher bar; only while
        # the round is played.
        opening = "" if short or not moving else f" (open with {opening_need(view)}+)"
        items.append([("", f"bar {view.bar}{opening}")])
    if not (rules is not None and rules.game_end == "rounds"):
        items.append([("", _game_end(view.options, short))])
    if moving:
        items.append([("", f"stock {view.stock_size}")])
        top = card(view.discard_top)
        shown = card_fragments(top, look) if top is not None else [("", "empty")]
        # Not "discard 9♣": on a line of its own that read as a move to make.
        items.append([("", "pile " if short else "pile top "), *shown])
    return items


def _game_end(options: game_pb2.Options, short: bool) -> str:
    """When a moroccan game ends: a total reaching the target, or the round cap (a view from a
    server always says both)."""
    cap = options.round_cap if options.HasField("round_cap") else 0
    if short:
        return f"to {options.target}" + (f" or {plural(cap, 'round')}" if cap else "")
    return f"game ends at {options.target}" + (f" or after {plural(cap, 'round')}" if cap else "")


def _players(view: game_pb2.View, look: Look, short: bool = False) -> list[StyleAndTextTuples]:
    """Every player, one item each: name, cards in hand, points, opened, away (fewer words
    when ``short``)."""
    names = seat_names(view)
    moving = view.phase in (game_pb2.PHASE_DRAW, game_pb2.PHASE_PLAY)
    rules = variant_of(view.variant)
    opening = rules is not None and rules.has_opening
    items: list[StyleAndTextTuples] = []
    for p, name in zip(view.players, names, strict=True):
        turn = moving and p.seat == view.turn
        style = "class:bottom-toolbar.mine" if p.seat == my_seat(view) else ""
        item: StyleAndTextTuples = [
            ("class:bottom-toolbar.turn", look.arrow if turn else " "),
            (style, name),
        ]
        if view.phase != game_pb2.PHASE_WAITING:
            facts = f" {plural(p.hand_size, 'card')}, {p.total} pts"
            if short:
                facts = f" {p.hand_size}c {p.total}p"
            if opening and p.opened:
                facts += ", opened" if not short else " open"
            if p.seat == view.dealer:
                facts += ", dealer" if not short else " D"
            if p.away and p.seat != my_seat(view):
                # (never the player reading this: a seat taken back once its game was over
                # stays away in the view, the game having no turn left to come back on)
                facts += ", away"
            elif not p.connected and view.phase != game_pb2.PHASE_GAME_OVER:
                # (once the game is over nobody is waited for: a player gone to another
                # table is not news of this one)
                facts += ", offline"
            item.append(("", facts))
        items.append(item)
    return items


def _words(fragments: StyleAndTextTuples) -> list[StyleAndTextTuples]:
    """Styled text cut after each word's spaces (each piece keeping its style), so that
    :func:`_flow` with no separator breaks it only between words."""
    words: list[StyleAndTextTuples] = []
    glued = False  # the last piece ended inside a word
    for style, text, *_ in fragments:
        for piece in re.findall(r"\S+\s*|\s+", text):
            if glued and words:
                words[-1].append((style, piece))
            else:
                words.append([(style, piece)])
            glued = not piece[-1].isspace()
    return words


def _flow(
    items: list[StyleAndTextTuples],
    sep: str,
    width: int,
    indent: str = "",
    first: StyleAndTextTuples | None = None,
    trim: bool = False,
) -> StyleAndTextTuples:
    """Items joined by ``sep``, starting a new line (after ``indent``) rather than running
    past ``width``; the first line starts with ``first`` (a label) instead of the indent.
    With ``trim``, an item that starts a new line drops its leading spaces."""
    # Sizes in terminal cells: a double-width character takes two.
    out: StyleAndTextTuples = list(first) if first is not None else [("", indent)]
    start = used = sum(cells(text) for _, text, *_ in out)
    for item in items:
        size = sum(cells(text) for _, text, *_ in item)
        if used > start and used + len(sep) + size > width:
            out += [("", "\n"), ("", indent)]
            start = used = cells(indent)
            if trim and item and item[0][1].startswith(" "):  # the line starts at the indent
                style, head, *rest = item[0]
                size -= len(head) - len(head.lstrip(" "))
                item = [(style, head.lstrip(" "), *rest), *item[1:]]  # type: ignore[list-item]
        elif used > start:
            out.append(("", sep))
            used += len(sep)
        out += item
        used += size
    return out


def toolbar_fragments(
    view: game_pb2.View | None,
    look: Look,
    *,
    now: float | None = None,
    note: str = "",
    width: int = 100,
    rows: int = 40,
    staged: bool = False,
    joker: bool = False,
) -> StyleAndTextTuples:
    """The bottom toolbar: whose turn and the clock; the table's facts; the players (lines
    broken to fit ``width`` columns, fewer words in a small window; ``staged``: a move waits
    for its lay; ``joker``: a joker taken back waits for its place)."""
    if view is None:
        return [("", note or " Not at a table: tables lists them, create starts one, help")]
    # While the connection is lost the clock is not known (a restarted server starts the
    # turn's clock again; one still up runs its own): the old one is not counted down.
    clock = "" if note else clock_text(view, time.time() if now is None else now, look)
    head: StyleAndTextTuples = []
    if note:  # a lost connection matters more than anything else on the line
        head.append(("class:bottom-toolbar.turn", f"{note}   "))
    head += turn_fragments(view, look, staged, joker)
    words = _words(head)
    if clock:  # one piece: its sign never at the end of a line and its time on the next
        words.append([("class:bottom-toolbar.turn", f"   {clock}")])
    out = _flow(words, "", width - 1, " ", [("", " ")], trim=True)
    short = small(width, rows)
    bar = " | " if look.ascii else " │ "
    out += [("", "\n"), *_flow(_facts(view, look, short), look.bullet, width - 1, " ")]
    out += [("", "\n"), *_flow(_players(view, look, short), bar, width - 1)]
    return out


def _melds(view: game_pb2.View, look: Look) -> list[StyleAndTextTuples]:
    names = seat_names(view)
    items: list[StyleAndTextTuples] = []
    for m in view.melds:
        owner = names[m.owner] if m.owner < len(names) else f"Seat {m.owner}"
        items.append(
            [
                ("class:label", f"[{m.number}] "),
                ("class:dim", f"{owner}: "),
                *meld_fragments(meld_from_proto(m.meld), look),
            ]
        )
    return items or [[("class:dim", "no melds yet")]]


def _label(text: str, size: int = _LABEL) -> StyleAndTextTuples:
    return [("class:label", f"{text} ".ljust(size))]  # a space after it, however long


def _lines(fragments: StyleAndTextTuples) -> int:
    return 1 + sum(text.count("\n") for _, text, *_ in fragments)


def _table(view: game_pb2.View, look: Look, width: int, rows: int, size: int) -> StyleAndTextTuples:
    """The melds, flowed under the label; when they would take more than their room, the
    newest that fit, after a note of how many more ``table`` shows."""
    items = _melds(view, look)
    room = _table_room(rows)
    pad = " " * size
    for skip in range(len(items)):
        shown = items[skip:]
        if skip:
            shown = [[("class:dim", f"+{skip} more (table)")], *shown]
        out = _flow(shown, "   ", width - 1, pad, _label("Table", size))
        if _lines(out) <= room:
            return out
    return out


def _last_round(view: game_pb2.View, look: Look, width: int, size: int) -> StyleAndTextTuples:
    """The round just played, while every seat plays its first turn of the next: who went out
    and what each paid (the round's own lines have scrolled away by then in a small window).
    Cut to ``width`` with an ellipsis and a pointer to ``scores``, which has the whole sheet."""
    if not (view.first_circuit and view.results):
        return []
    last = view.results[-1]
    if last.round != view.round - 1:
        return []
    names = seat_names(view)
    dot, more = (" - ", "...") if look.ascii else (" · ", "…")
    # Who went out (paying nothing) is said by the ending; the others, the largest payment
    # first, so that a cut to the width drops the smallest.
    paying = [
        (p, s)
        for s, p in enumerate(last.points)
        if s < len(names) and not (s == last.winner and p == 0 and last.HasField("winner"))
    ]
    paying.sort(key=lambda ps: (-ps[0], ps[1]))
    each = [f"{names[s]} {p}" for p, s in paying]
    head = ending_note(result_from_proto(last), names) + dot + "paid: "
    line = head + dot.join(each)
    room = width - 1 - size
    if cells(line) > room:
        # Whole payments, as many as fit (the largest), and where the rest is when there is
        # room to say.
        cuts = [
            head + dot.join(each[:n]) + dot + more + tail
            for n in range(len(each) - 1, 0, -1)
            for tail in (" (scores)", "")
        ]
        line = next((c for c in cuts if cells(c) <= room), clip(line, room - cells(more)) + more)
    return [*_label(f"Round {last.round}", size), ("class:dim", line), ("", "\n")]


def panel_fragments(
    view: game_pb2.View | None,
    look: Look,
    *,
    by_rank: bool = False,
    staged: str = "",
    width: int = 100,
    rows: int = 40,
    pile: Pile | None = None,
) -> StyleAndTextTuples:
    """What stays above the prompt: the melds on the table, the discard pile's top cards (in
    a window of 20 rows or more), the hand, anything staged (lines broken to fit ``width``
    columns; in a small window, shorter labels and only the melds that leave room for the
    events above). Nothing once the game is over: its last events and the result above take
    the room (table shows the melds)."""
    if view is None or view.phase == game_pb2.PHASE_GAME_OVER:
        return []
    out: StyleAndTextTuples = []
    playing = view.phase != game_pb2.PHASE_WAITING
    short = small(width, rows)
    size = _SHORT_LABEL if short else _LABEL
    pad = " " * size
    rules = variant_of(view.variant)
    if playing and (view.melds or (rules is not None and rules.has_opening)):
        out += _table(view, look, width, rows, size)
        out.append(("", "\n"))
    moving = view.phase in (game_pb2.PHASE_DRAW, game_pb2.PHASE_PLAY)
    if moving and pile is not None and pile.on_pile() and rows >= 20:
        names = seat_names(view)
        top = pile.line(names, look, width - 1 - size, view.discard_size)
        out += [*_label("Pile", size), *top, ("", "\n")]
    if moving and rows >= 20 and not short:
        out += _last_round(view, look, width, size)
    seat = my_seat(view)
    if seat is None:
        return [*out, *_label("Watching"), ("class:dim", "as a spectator"), ("", "\n")]
    if not playing:
        return out
    hand = cards(view.hand)
    groups = hand_groups(hand, look, by_rank=by_rank, drawn=card(view.drawn))
    count = f"{len(hand)} card{'s' if len(hand) != 1 else ''}"
    order = "by rank" if by_rank else "by suit"
    note = f"({len(hand)})" if short else f" ({count}, {order}; F2 sorts)"
    if hand:
        groups.append([("class:dim", note)])
    else:  # gone out: nothing to sort
        groups = [[("class:dim", "no cards left")]]
    out += [*_flow(groups, "  ", width - 1, pad, _label("Hand", size), trim=True), ("", "\n")]
    if staged:
        out += [*_label("Staged", size), ("class:warn", staged), ("", "\n")]
    return out


def prompt_fragments(view: game_pb2.View | None, look: Look) -> StyleAndTextTuples:
    """The prompt itself: it says whose move it is."""
    if view is None:
        return [("class:prompt", "rami> ")]
    if my_seat(view) is None:
        return [("class:prompt", "watching> ")]
    if _is_my_turn(view):
        return [("class:prompt.mine", "your turn> ")]
    return [("class:prompt", "> ")]


def table_lines(view: game_pb2.View, look: Look, name: str = "") -> list[StyleAndTextTuples]:
    """The whole table, to print on demand: its facts, every player, then every meld (last:
    nearest the prompt, where ``add`` and ``take`` need their numbers, in a small window
    too)."""
    names = seat_names(view)
    rules = variant_of(view.variant)
    b = look.bullet
    table_id = safe(view.table_id, 32)
    title = f'Table "{safe(name, 40)}" ({table_id})' if name else f"Table {table_id}"
    lines: list[StyleAndTextTuples] = [
        [("class:heading", title)],
        _flow(_facts(view, look), look.bullet, 999, "  "),
    ]
    # A name may have all 24 characters, twice as many cells when they are double-width.
    width = max([24, *(cells(n) for n in names)])
    for p, who in zip(view.players, names, strict=True):
        turn = view.phase in (game_pb2.PHASE_DRAW, game_pb2.PHASE_PLAY) and p.seat == view.turn
        facts = f"seat {p.seat}{b}{plural(p.hand_size, 'card')}{b}{plural(p.total, 'point')}"
        if p.opened and rules is not None and rules.has_opening:
            facts += f"{b}opened"
        if p.kind == game_pb2.SEAT_KIND_BOT:
            facts += f"{b}{p.policy} bot"
        if p.seat == view.dealer and view.round:
            facts += f"{b}dealer"
        if view.phase == game_pb2.PHASE_WAITING:
            facts = f"seat {p.seat}" + (f"{b}{p.policy} bot" if p.policy else "")
        lines.append(
            [
                ("class:turn", f"  {look.arrow if turn else ' '} "),
                ("", f"{ljust(who, width)} "),
                ("class:dim", facts),
            ]
        )
        if p.known and view.phase in (game_pb2.PHASE_DRAW, game_pb2.PHASE_PLAY):
            # Cards taken from the pile (or shown in a declaration): everyone saw them.
            lines.append(
                [
                    ("class:dim", f"    {' ' * width}known to hold "),
                    *cards_fragments(cards(p.known), look),
                ]
            )
    for m in view.melds:
        owner = names[m.owner] if m.owner < len(names) else f"Seat {m.owner}"
        lines.append(
            [
                ("class:label", f"  [{m.number}] "),
                ("class:dim", f"{owner}: "),
                *meld_fragments(meld_from_proto(m.meld), look),
            ]
        )
    return lines
