"""Hints: the solver's best arrangement of the hand, and the plays it allows now, written as
commands the person can type.

The arrangement comes from the server (``AnalyseMyHand``, so a table that turns analysis off
gets none); the plays open now come from the engine's :mod:`~rami.engine.plays`, and the
suggestion from its strong policy, both run on the seat's own view.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from itertools import combinations, product

from prompt_toolkit.formatted_text import StyleAndTextTuples

from rami.engine import (
    POLICIES,
    Action,
    AddToMeld,
    Card,
    Discard,
    Draw,
    Lay,
    Meld,
    MeldError,
    NewMeld,
    Phase,
    TakeJoker,
    View,
    format_action,
    format_cards,
)
from rami.engine.plays import legal_plays
from rami.v1 import game_pb2

from .cardtext import cards_fragments, meld_fragments
from .convert import cards, meld_from_proto
from .look import Look
from .scores import clean_sets, listed

__all__ = ["MAX_PLAYS", "command_text", "hint_lines", "plays_now"]

#: The most plays listed, so a hint stays readable.
MAX_PLAYS = 6


def command_text(action: Action) -> str:
    """An action as the person would type it: new melds after one ``lay``, commas between.

    >>> from rami.engine import parse_action
    >>> command_text(parse_action("lay Qc Qh Qs; lay 6h 7h 8h"))
    'lay Qc Qh Qs, 6h 7h 8h'
    """
    lay = action.lay if isinstance(action, Draw) else action
    if isinstance(lay, Lay) and all(isinstance(s, NewMeld) for s in lay.steps):
        news = [s for s in lay.steps if isinstance(s, NewMeld)]
        melds = ", ".join(format_cards(s.cards, ascii=True) for s in news)
        text = f"lay {melds}"
        return f"draw discard; {text}" if isinstance(action, Draw) else text
    return format_action(action)


def plays_now(view: View) -> list[str]:
    """The plays worth naming now (not plain draws and discards), as commands."""
    return list(_plays(view))


def _plays(view: View) -> dict[str, Action]:
    """:func:`plays_now`, each with its action."""
    out: dict[str, Action] = {}
    for action in legal_plays(view):
        if isinstance(action, Draw) and action.lay is None:
            continue
        if isinstance(action, Discard):
            continue
        # (two plays may read alike: the same cards, another order)
        out.setdefault(command_text(action), action)
        if len(out) == MAX_PLAYS:
            break
    return out


def is_rami_sec(view: View, action: Action) -> bool:
    """Whether ``action`` (legal now) lays every card but one while nobody has laid this
    round: a Rami sec, for which everyone else pays 200 (in simple, only at a table with
    ``simple_rami_sec``)."""
    lay = action.lay if isinstance(action, Draw) else action
    if not isinstance(lay, Lay) or view.hand is None or view.melds:
        return False  # (someone has laid this round: the table has melds)
    if view.variant.lays_whole_hand and not view.options.simple_rami_sec:
        return False
    # A joker taken back comes to the hand as the card given for it leaves: it laid none.
    laid = sum(len(step.cards) for step in lay.steps if not isinstance(step, TakeJoker))
    return len(view.hand) + (1 if isinstance(action, Draw) else 0) - laid == 1


def _suggestion(view: View) -> str | None:
    if not view.my_turn:
        return None
    try:
        action = POLICIES["strong"](view, random.Random(view.number))
    except Exception:  # a hint must never break the game
        return None
    return command_text(action)


def _arrangement(
    analysis: game_pb2.Analysis, look: Look, whole: str | None = None
) -> StyleAndTextTuples:
    """The best melds and what is left over; ``whole``: what the hand pays if another player
    goes out now (where every card held pays, melds in hand too)."""
    out: StyleAndTextTuples = [("class:label", "Best arrangement: ")]
    for i, m in enumerate(analysis.melds):
        if i:
            out.append(("", "  "))
        out += [("", "["), *meld_fragments(meld_from_proto(m), look), ("", "]")]
    if not analysis.melds:
        out.append(("class:dim", "no melds"))
    left = cards(analysis.left)
    if left:
        out += [
            ("", "; left over: "),
            *cards_fragments(left, look),
            ("", f" ({analysis.points_left} points)"),
        ]
    else:
        out.append(("class:good", "; nothing left over"))
    if whole is not None:  # melds in the hand pay as well
        out.append(("", f". {whole}"))
    return out


def clean_runs(hand: Sequence[Card]) -> list[tuple[Card, ...]]:
    """Three cards in a row of one suit from ``hand``, no joker (one per run found)."""
    found: list[tuple[Card, ...]] = []
    naturals = sorted({c for c in hand if not c.is_joker})
    for trio in combinations(naturals, 3):
        if len({c.suit for c in trio}) != 1:
            continue
        try:
            meld = Meld.from_cards(trio)
        except MeldError:
            continue
        if meld.kind == "run":
            found.append(tuple(meld.cards))
    return found


def _longest(run: tuple[Card, ...], hand: Sequence[Card]) -> tuple[Card, ...]:
    """``run`` grown by the cards of ``hand`` that extend it, at either end (no joker)."""
    naturals = {c for c in hand if not c.is_joker}
    cards = list(run)
    grown = True
    while grown:
        grown = False
        for c in sorted(naturals - set(cards)):
            try:
                Meld.from_cards([*cards, c])
            except MeldError:
                continue
            cards.append(c)
            grown = True
    return tuple(Meld.from_cards(cards).cards)


def _why_no_opening(hand: Sequence[Card], look: Look) -> str:
    """What a hand lacks for an opening (a clean set and a clean run)."""
    sets, runs = clean_sets(hand), clean_runs(hand)

    def shown(cards: tuple[Card, ...]) -> str:
        return " ".join(look.card_text(c) for c in cards)

    if sets and not runs:
        return f"No opening yet: you have a clean set ({shown(sets[0])}) but no clean run."
    if runs and not sets:
        whole = _longest(runs[0], hand)
        return f"No opening yet: you have a clean run ({shown(whole)}) but no clean set."
    if sets and runs:
        held = Counter(hand)
        for a_set, a_run in product(sets, runs):
            if not Counter(a_set) + Counter(a_run) - held:
                # Both can be laid apart: what is missing is a card left over to discard.
                return (
                    f"No opening yet: a clean set ({shown(a_set)}) and a clean run "
                    f"({shown(a_run)}) are there, but laying both leaves no card to discard."
                )
        shared = sorted((Counter(sets[0]) + Counter(runs[0]) - held).elements())
        return (
            f"No opening yet: a clean set ({shown(sets[0])}) and a clean run "
            f"({shown(runs[0])}) are there, but they share {shown(tuple(shared))}: you hold "
            f"only one{' of each' if len(shared) > 1 else ''}, and a card goes in one meld only."
        )
    return "No opening yet: you have neither a clean set nor a clean run."


def _why_no_melds(analysis: game_pb2.Analysis, view: View, look: Look) -> str | None:
    """Where sets need a run: why a set held counts for nothing yet."""
    if not view.variant.sets_need_run or view.hand is None:
        return None
    runs = clean_runs(view.hand)
    sets = clean_sets(view.hand)
    if runs or not sets:
        return None
    held = [" ".join(look.card_text(c) for c in s) for s in sets]
    which = f"sets {listed(held)} count" if len(held) > 1 else f"set {held[0]} counts"
    return (
        f"Your {which} only beside a clean run (three in a row of one suit, no joker), and "
        "you have none yet."
    )


def _finish_lacks(analysis: game_pb2.Analysis, view: View) -> list[tuple[str, str]]:
    """Simple: what a hand whose best split leaves at most one card lacks to finish, each as
    (the meld, what it is): a clean set, a clean run, or both; none when it lacks neither (or
    is no such hand)."""
    if not view.variant.lays_whole_hand or view.hand is None or analysis.finish_discards:
        return []
    if len(analysis.left) > 1 or len(view.hand) < 2:
        return []
    lacks = []
    if not clean_sets(view.hand):
        lacks.append(("a clean set", "three or four of one rank, all suits different, no joker"))
    if not clean_runs(view.hand):
        lacks.append(("a clean run", "three in a row of one suit, no joker"))
    return lacks


def _discard_lays(view: View) -> str:
    """What the card on the pile, taken now, lets the hand lay: "open" (a lay that opens, or
    adds once opened), "finish" (only a whole-hand lay: all cards but one, which needs no
    opening's points), or "" (nothing)."""
    if not view.my_turn or view.phase != Phase.DRAW or view.hand is None:
        return ""
    try:
        lays = [a.lay for a in legal_plays(view) if isinstance(a, Draw) and a.lay is not None]
    except Exception:  # a hint must never break the game
        return ""
    if not lays:
        return ""
    whole = len(view.hand)  # the hand and the card taken, less the one thrown
    laid = (
        sum(len(step.cards) for step in lay.steps if isinstance(step, NewMeld | AddToMeld))
        for lay in lays
    )
    return "finish" if all(n >= whole for n in laid) else "open"


def _variant_facts(analysis: game_pb2.Analysis, view: View, look: Look) -> list[str]:
    facts: list[str] = []
    variant = view.variant
    why = _why_no_melds(analysis, view, look)
    if why is not None:
        facts.append(why)
    if variant.has_opening and view.seat is not None and not view.opened[view.seat]:
        need = max(view.options.opening, view.bar + 1)
        value = analysis.opening_value
        top = look.card_text(view.discard_top) if view.discard_top is not None else ""
        if value:
            short = f"short of {need} by {need - value} points"
            if top and not analysis.can_open and _discard_lays(view):
                short += f", but taking {top} from the discard pile lets you lay (below)"
            verdict = "enough to open" if analysis.can_open else short
            facts.append(f"Your best opening is worth {value}: {verdict}.")
        else:
            why = _why_no_opening(view.hand or (), look)
            lays = _discard_lays(view) if top else ""
            if lays == "finish":
                why = (
                    f"{why[:-1]}; taking {top} from the discard pile lets you go out, laying"
                    " your whole hand (below)."
                )
            elif lays:
                why = f"{why[:-1]}; taking {top} from the discard pile lets you open (below)."
            facts.append(why)
    if variant.declares and analysis.declare_cards:
        names = ", ".join(look.card_text(c) for c in cards(analysis.declare_cards))
        times = f" (x{analysis.multiplier})" if analysis.multiplier > 1 else ""
        facts.append(f"You can declare{times}, putting face down: {names}.")
    elif variant.declares and analysis.multiplier:
        facts.append("Your 13 cards are complete: draw, then declare the card you don't need.")
    lacks = _finish_lacks(analysis, view)
    if lacks:
        melds = " and ".join(meld for meld, _ in lacks)
        what = "; ".join(what for _, what in lacks)
        none = "neither" if len(lacks) > 1 else "none"
        facts.append(
            f"Your melds would leave at most one card, but a finish needs {melds} among them"
            f" ({what}), and you have {none} yet: no finish."
        )
    if analysis.finish_discards and variant.has_finish:
        # Any one of them is the card kept: "5♣, 9♣ or K♦".
        kept = [look.card_text(c) for c in cards(analysis.finish_discards)]
        names = kept[0] if len(kept) == 1 else f"{', '.join(kept[:-1])} or {kept[-1]}"
        if view.phase == Phase.DRAW and view.my_turn:
            # Before the draw: the card drawn must fit as well (the turn lays all but one).
            facts.append(
                f"All your cards but one fit in melds (keeping {names}): you finish if the"
                " card you draw fits them too."
            )
        else:
            # The arrangement counts points: it may not be a lay the rules allow (a whole-hand
            # finish in tallage needs a clean set and a clean run among its melds).
            how = (
                " The arrangement above only counts points; the plays below are lays the rules"
                " accept."
                if view.my_turn
                else ""
            )
            facts.append(f"You can lay everything but one card, keeping {names}.{how}")
    return facts


def hint_lines(analysis: game_pb2.Analysis, view: View, look: Look) -> list[StyleAndTextTuples]:
    """The lines of a hint: arrangement, what the variant allows, plays now, a suggestion."""
    whole = None
    over = view.phase in (Phase.ROUND_OVER, Phase.GAME_OVER)
    # Drawn, not yet thrown: nobody else plays before the discard.
    drawn = view.my_turn and view.phase == Phase.PLAY
    if not view.variant.declares and view.hand is not None and not over:
        # A finish makes the others pay every card they hold (a declaration, only those out
        # of their best melds: the points left over); a Rami sec, 200.
        values = view.options.hand_values(view.variant)
        cost = f"{sum(values[c] for c in view.hand)} points"
        if view.variant.lays_whole_hand and view.options.simple_rami_sec:
            cost = "200 points (every finish is a Rami sec at this table)"
        else:
            if drawn:  # the hand they would make pay is this one less the card thrown
                cost += " less the card you throw"
            if view.variant.has_opening and not view.melds:
                cost += " (200 if they lay their whole hand while nobody has laid: a Rami sec)"
        whole = (
            "Once you have discarded, another player going out would cost you every card you"
            f" still hold: {cost}."
            if drawn
            else f"Another player going out now would cost you every card you hold: {cost}."
        )
    if drawn and view.hand is not None and len(view.hand) == 1 and not over:
        # Its throw goes out: no other player moves before it, so nobody makes it pay.
        whole = "Throw your last card to go out."
    if view.variant.declares and drawn and analysis.left and not over:
        # The hand holds one card more than the one another player's
        # declaration would make pay (a player counted 14 cards and took them for the bill).
        whole = "The points left over count the card you are about to throw."
    lines: list[StyleAndTextTuples] = [_arrangement(analysis, look, whole)]
    if over:
        # What a turn could do cannot be done any more: the arrangement alone.
        ended = "The game is over" if view.phase == Phase.GAME_OVER else "The round is over"
        return [*lines, [("class:dim", f"{ended}: no more plays with this hand.")]]
    lines += [[("", fact)] for fact in _variant_facts(analysis, view, look)]
    if view.my_turn:
        plays = _plays(view)
        suggestion = _suggestion(view)
        for play, action in plays.items():
            # The line holds the command alone, to be copied as it is; what is said of it
            # comes on the next.
            lines.append([("class:dim", "  you can: "), ("class:me", play)])
            notes = []
            if is_rami_sec(view, action):
                notes.append("a Rami sec: everyone else pays 200")
            if play == suggestion:
                notes.append("the strong bot's choice")
            if notes:
                lines.append([("class:dim", f"           ({'; '.join(notes)})")])
        if suggestion and suggestion not in plays:
            lines.append([("class:dim", "The strong bot would play: "), ("class:me", suggestion)])
        if view.phase == Phase.DRAW and not plays and not suggestion:
            lines.append([("class:dim", "Take a card first: draw stock or draw discard.")])
    else:
        lines.append([("class:dim", "It is not your turn: hints for plays come on your turn.")])
    return lines
