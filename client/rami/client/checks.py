"""What the client says of a move before and after it is sent, in the player's words.

Before: :func:`cannot` says why a move can never go through from what the view shows (it is
then neither staged nor sent), :func:`not_held` names the cards a move needs and the hand
lacks, and :func:`incomplete` puts the question before a declaration that is not complete.
After: :func:`refusal` tells the server's refusal with the players' names and what to type
instead. All of them are pure: the view, the variant and what is staged in, words out.

>>> sentence("the table moved on (look again)")
'The table moved on (look again).'
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from rami.engine import (
    Action,
    AddToMeld,
    Card,
    Declare,
    Discard,
    Draw,
    Lay,
    MeldError,
    NewMeld,
    TakeJoker,
    Variant,
)
from rami.v1 import game_pb2

from .commands import why_not_in_variant
from .convert import card, cards, meld_from_proto
from .link import Refused
from .moves import check_ranks, missing_cards
from .panel import discard_lay, discard_withheld, i_opened, my_seat
from .staging import Stage

__all__ = [
    "cannot",
    "incomplete",
    "is_card",
    "my_turn",
    "no_discard",
    "not_held",
    "refusal",
    "sentence",
]

#: How a card is written for the player (``Look.card_text``).
CardText = Callable[[Card], str]


def my_turn(view: game_pb2.View) -> bool:
    """Whether the view's watcher is the seat to move, drawing or playing."""
    return my_seat(view) == view.turn and view.phase in (game_pb2.PHASE_DRAW, game_pb2.PHASE_PLAY)


def not_held(
    missing: Sequence[Card],
    hand: Sequence[Card],
    card_text: CardText,
    done: str = "Nothing was played.",
    pile_top: Card | None = None,
) -> str:
    """The cards of a move that ``hand`` lacks, said with the like cards it holds, or how
    often it holds a card named more often than that, then ``done``. ``pile_top``: the top
    of the discard pile, which the player may take now (when it is the one card missing, it
    is said to be there: :func:`untaken_top`)."""
    said: list[str] = []
    absent = [c for c in missing if c not in hand]
    if absent:
        names = ", ".join(card_text(c) for c in absent)
        similar = sorted({c for c in hand for m in absent if c.rank == m.rank and c != m})
        also = f" (you hold {', '.join(card_text(c) for c in similar)})" if similar else ""
        said.append(f"You don't hold {names}{also}")
        if absent == [pile_top]:
            said.append(
                f"{card_text(pile_top)} is the top of the discard pile: type draw discard"
                " first, then the move"
            )
    # A card named more often than it is held: say how often it is.
    for c in sorted({c for c in missing if c in hand}):
        n = list(hand).count(c)
        said.append(f"You hold {card_text(c)} only {'once' if n == 1 else f'{n} times'}")
    return f"{'. '.join(said)}. {done}"


def untaken_top(view: game_pb2.View) -> Card | None:
    """The top of the discard pile while the player may take it now (their turn, before the
    draw, and the rules offer it), for :func:`not_held`; else None."""
    if not my_turn(view) or view.phase != game_pb2.PHASE_DRAW:
        return None
    if game_pb2.DRAW_SOURCE_DISCARD not in view.draw_sources:
        return None  # the first circuit, one card held, no lay to take it at once...
    return card(view.discard_top)


def has_drawn(view: game_pb2.View) -> bool:
    """Whether the player to move has taken their card this turn (the dealer's first turn
    of a moroccan round is played without one)."""
    return my_turn(view) and view.phase == game_pb2.PHASE_PLAY and card(view.drawn) is not None


def incomplete(face_down: Card, view: game_pb2.View, card_text: CardText) -> str:
    """The question to put before an incomplete declaration ("" when it is complete, or
    when the server would refuse it anyway and nothing would be shown)."""
    if not view.can_declare or not my_turn(view):
        return ""
    if view.options.false_declaration == game_pb2.FALSE_DECLARATION_REJECT:
        return ""
    complete = [card(d.card) for d in view.declarations]
    if face_down in complete:
        return ""
    would = " or ".join(f"declare {card_text(c)}" for c in complete if c is not None)
    hint = f" {would} would be complete." if would else " No card makes it complete now."
    return (
        f"With {card_text(face_down)} face down your hand is not complete: declaring shows your "
        f"13 cards to everyone, {card_text(face_down)} becomes an ordinary discard and play goes "
        f"on.{hint} Type y (or yes) to declare anyway; anything else does not."
    )


def cannot(
    action: Action,
    view: game_pb2.View,
    variant: Variant,
    *,
    stage: Stage,
    opened_before_turn: bool,
    card_text: CardText,
) -> str:
    """Why ``action`` can never go through, from what the view shows ("" when it may):
    said at once, before anything is staged or sent. ``stage`` is what waits for its lay,
    ``opened_before_turn`` whether the player had opened when this turn began (one who opens
    lays again only from the next turn)."""
    if variant.declares and (
        isinstance(action, Lay) or (isinstance(action, Draw) and action.lay is not None)
    ):
        # The rule first: which cards are held does not matter when nothing is laid.
        return f"{why_not_in_variant('lay', variant)} Nothing was sent."
    offered = game_pb2.DRAW_SOURCE_DISCARD in view.draw_sources
    drawing = my_turn(view) and view.phase == game_pb2.PHASE_DRAW
    if isinstance(action, Declare | Discard) and drawing and stage.draw is None:
        # Before whether the card is held: it may be the one about to be drawn. (A draw of
        # the discard staged waits for its lay: the staging says so.)
        verb = "declare" if isinstance(action, Declare) else "discard"
        how = "draw stock, or draw discard" if offered else "draw stock"
        return f"Draw first: you {verb} after taking a card ({how}). Nothing was sent."
    if (
        (isinstance(action, Lay) or (isinstance(action, Draw) and action.source == "discard"))
        and not my_turn(view)
        and view.phase in (game_pb2.PHASE_DRAW, game_pb2.PHASE_PLAY)
        and my_seat(view) is not None
    ):
        # (Staged, a draw of the discard or a take would wait for a lay, and be dropped when
        # the pile changes, or refused once the lay is typed.)
        turn = view.players[view.turn].name if view.turn < len(view.players) else "another"
        return f"It is {turn}'s turn, not yours. Nothing was staged or sent."
    if isinstance(action, Draw) and my_turn(view) and not drawing:
        # (A draw of the discard waits for its lay: said now, not once the lay is typed; and
        # a draw of the stock in the same words.)
        why = (
            "you have already drawn this turn"
            if has_drawn(view)
            else "the dealer plays the first turn without drawing: lay or discard"
        )
        return f"You can't draw now: {why}. Nothing was staged or sent."
    if isinstance(action, Draw) and action.source == "discard" and drawing and not offered:
        why = no_discard(view)
        if why:
            return f"You can't take the discard now: {why}."
    lay = action.lay if isinstance(action, Draw) else action
    if not isinstance(lay, Lay) or not my_turn(view):
        return ""
    opened = i_opened(view)
    if opened and not opened_before_turn:
        if variant.lays_whole_hand:
            return "You laid your hand this turn: discard your last card. Nothing was sent."
        return (
            "You opened this turn: you lay again from your next turn. Nothing was staged or sent."
        )
    table = {m.number: meld_from_proto(m.meld) for m in view.melds}
    steps = (*stage.steps, *lay.steps)
    # What the lay plays from: the hand, and the discard's card when it is drawn with it
    # (staged before, or first in the same line: "draw discard; take 1 3c; ...").
    drawn = stage.draw
    if drawn is None and isinstance(action, Draw) and action.source == "discard":
        drawn = card(view.discard_top)
    held = list(cards(view.hand)) + ([drawn] if drawn is not None else [])
    short = missing_cards(Lay(steps), held)
    laid = 0
    for i, step in enumerate(steps):
        if isinstance(step, NewMeld):
            laid += 1
        if not isinstance(step, TakeJoker):
            continue
        if variant.has_opening and not opened:
            return (
                "You have not opened yet: you take a joker back only once you have opened "
                "(from the turn after your opening). Nothing was staged or sent."
            )
        touched = any(
            isinstance(s, AddToMeld | TakeJoker) and s.meld == step.meld for s in steps[:i]
        )
        # The card first, but after the meld when it holds no joker at all (the table
        # misread), then whether there is such a meld.
        bare = step.meld in table and not touched and table[step.meld].jokers == 0
        if step.card in short and not bare:
            return not_held([step.card], held, card_text, "Nothing was staged or sent.")
        if step.meld not in table and not (1 <= step.meld <= len(table) + laid):
            return f"There is no meld {step.meld} on the table. Nothing was staged or sent."
        if step.meld in table and not touched:
            try:
                table[step.meld].with_joker_taken(step.card)
            except MeldError:
                return (
                    f"Meld {step.meld} has no joker that {card_text(step.card)} can replace. "
                    "Nothing was staged or sent."
                )
    return ""


def no_discard(view: game_pb2.View) -> str:
    """Why the rules keep the discard from the player now, as the view tells it
    (``panel.discard_withheld``), in words."""
    # With two cards, the meld that looks plain (the discard and both cards) is no lay.
    two = (
        " (a lay leaves you a card to discard, and a meld of it and your two cards would not)"
        if len(view.hand) == 2
        else ""
    )
    return {
        "empty": "the discard pile is empty",
        "first_circuit": (
            "nobody takes the discard during the first circuit of the round (each player's"
            " first turn)"
        ),
        "one_card": "holding one card, you draw from the stock",
        "lay_at_once": (
            f"it is taken only to be laid at once, and no {discard_lay(view)} this turn uses"
            f" it{two}; draw stock"
        ),
    }.get(discard_withheld(view), "the rules do not offer it this turn; draw stock")


def is_card(word: str) -> bool:
    """Whether ``word`` reads as one card (``10h``, ``QS``, ``jk``)."""
    try:
        check_ranks(word)
        Card.parse(word)
    except ValueError:
        return False
    return True


def sentence(text: str) -> str:
    """``text`` as a sentence: a capital first, a full stop last (after a closing bracket
    too, unless what it closes ended the sentence)."""
    text = text.strip()
    if not text:
        return text
    text = text[0].upper() + text[1:]
    return text if text.rstrip(")")[-1:] in (".", "!", "?") else text + "."


def refusal(error: Refused, names: Sequence[str] = (), bar: int = 0) -> str:
    """The server's refusal of a move, for the player: seats named by ``names``, what beats
    the ``bar``, and how to type what the engine's words ask for."""
    if error.reason == "STALE":
        return "The table moved on before your move arrived; nothing was played. Look again."
    text = sentence(str(error))
    low = re.fullmatch(r"An opening needs .* at least (\d+); yours are worth (\d+)\.", text)
    if error.reason == "OPENING_TOO_LOW" and low and bar >= int(low.group(1)):
        # The rules check the least opening before the bar: above it, say what beats the bar.
        text = (
            f"An opening must beat the bar of {bar}: it needs clean melds worth {bar + 1} or "
            f"more; yours are worth {low.group(2)}."
        )
    mixed = re.match(r"(.*) is neither a run \(", text)
    if error.reason == "INVALID_MELD" and mixed and len(mixed.group(1).split()) >= 6:
        # Most likely several melds typed as one.
        text += " To lay several melds, put commas between them: lay 7h 8h 9h, Ks Kd Kc."
    end = re.search(r"name the (low|high) end to put it there\.$", text)
    if end:  # the engine's words, not the client's: say how to name it here
        text = f"{text[:-1]}: type {end.group(1)} after the cards of the add."
    if names:  # the server speaks of seats; the person knows the players by name

        def name(match: re.Match[str]) -> str:
            seat = int(match.group(1))
            return names[seat] if seat < len(names) else match.group(0)

        text = re.sub(r"\b[Ss]eat (\d+)\b", name, text)
        text = text[:1].upper() + text[1:]
    return f"Refused: {text} Nothing was played."
