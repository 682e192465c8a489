"""Score tables: what each player paid at the end of a round, and the totals at the end."""

from __future__ import annotations

from collections.abc import Sequence

from prompt_toolkit.formatted_text import StyleAndTextTuples

from rami.engine import Card, Meld, Variant
from rami.engine.events import RoundResult
from rami.engine.solver import deadwood_split

from .cardtext import cards_fragments, meld_fragments
from .look import Look
from .safetext import cells, clip, ljust, rjust

__all__ = ["clean_sets", "ending_text", "game_table", "round_table", "score_sheet"]


def _name(names: Sequence[str], seat: int | None) -> str:
    if seat is None:
        return "nobody"
    return names[seat] if 0 <= seat < len(names) else f"Seat {seat}"


def ending_text(result: RoundResult, names: Sequence[str]) -> str:
    """How a round ended, in one sentence."""
    who = _name(names, result.winner)
    if result.ending == "void":
        return (
            f"Round {result.round} is void: the stock ran out, or the round reached the"
            " server's limit of turns. Nobody pays."
        )
    if result.ending == "rami_sec":
        return (
            f"Round {result.round}: {who} laid the whole hand at once: Rami sec! "
            "Everyone else pays 200."
        )
    if result.ending == "declare":
        times = f" (x{result.multiplier})" if result.multiplier > 1 else ""
        return f"Round {result.round}: {who} declared a complete hand{times}."
    return f"Round {result.round}: {who} went out (Rami)."


def paid_for(
    result: RoundResult, hand: Sequence[Card], variant: Variant | None, jokers_per_meld: int = 1
) -> tuple[Card, ...]:
    """The cards of a hand that were paid for: after a declaration, only those its best split
    leaves over (what was paid); otherwise the whole hand."""
    return _split(result, hand, variant, jokers_per_meld)[0]


def _split(
    result: RoundResult, hand: Sequence[Card], variant: Variant | None, jokers_per_meld: int
) -> tuple[tuple[Card, ...], tuple[Meld, ...]]:
    """The cards of a hand paid for, and the melds that were not (after a declaration: the
    hand's best split; otherwise the whole hand, and none)."""
    if result.ending == "declare" and variant is not None:
        split = deadwood_split(
            hand, variant.values, need_run=True, jokers_per_meld=max(1, jokers_per_meld)
        )
        return tuple(split.left), tuple(split.melds)
    return tuple(hand), ()


def round_table(
    result: RoundResult,
    names: Sequence[str],
    look: Look,
    variant: Variant | None = None,
    jokers_per_meld: int = 1,
) -> StyleAndTextTuples:
    """The round's score table: each player's points paid, total, and the cards paid for (after
    a declaration, the cards left over from the hand's best melds, and on a line under them
    those melds: every hand is shown)."""
    width = max([cells(n) for n in names] + [6])
    shown = "paid for" if result.ending == "declare" and variant is not None else "left in hand"
    out: StyleAndTextTuples = [
        ("class:heading", f"  {'player'.ljust(width)}  {'paid':>5}  {'total':>5}  {shown}"),
        ("", "\n"),
    ]
    for seat, name in enumerate(names):
        paid = result.points[seat] if seat < len(result.points) else 0
        total = result.totals[seat] if seat < len(result.totals) else 0
        style = "class:good" if seat == result.winner else ""
        out.append((style, f"  {ljust(name, width)}  {paid:>5}  {total:>5}  "))
        hand = result.hands[seat] if seat < len(result.hands) else ()
        hand, melds = _split(result, hand, variant, jokers_per_meld)
        if seat == result.winner and result.ending != "void":
            out.append(("class:dim", "(went out)" if result.ending != "declare" else "(declared)"))
            melds = ()  # (its declaration showed them)
        elif hand:
            out += cards_fragments(hand, look)
            times = result.multiplier if result.ending == "declare" else 1
            if times > 1 and paid and paid % times == 0:
                out.append(("class:dim", f"  ({paid // times} x{times})"))
            if _sets_paid(result, variant, hand, melds):
                out.append(("class:dim", "  (no clean run: its sets pay too)"))
        else:
            out.append(("class:dim", "-"))
        out.append(("", "\n"))
        if melds:
            # Every hand is shown at a round's end: under what it paid, the melds it kept.
            out.append(("class:dim", f"  {' ' * width}  {'':>5}  {'':>5}  melds kept:"))
            for meld in melds:  # each apart: side by side, two melds read as one
                out += [("", " ["), *meld_fragments(meld, look), ("", "]")]
            out.append(("", "\n"))
    return out


def _sets_paid(
    result: RoundResult, variant: Variant | None, hand: Sequence[Card], melds: Sequence[Meld]
) -> bool:
    """After a declaration, where sets count only beside a run: a hand that kept no meld
    though it holds a set (three suits of a rank) paid for it, having no clean run."""
    if result.ending != "declare" or variant is None or not variant.sets_need_run or melds:
        return False
    return bool(clean_sets(hand))


def clean_sets(hand: Sequence[Card]) -> list[tuple[Card, ...]]:
    """The clean sets in ``hand``: each rank held in three or more suits, no joker."""
    by_rank: dict[int, dict[int, Card]] = {}
    for c in hand:
        if not c.is_joker:
            by_rank.setdefault(c.rank, {}).setdefault(c.suit, c)
    return [tuple(sorted(s.values())) for _, s in sorted(by_rank.items()) if len(s) >= 3]


def ending_note(result: RoundResult, names: Sequence[str]) -> str:
    """How a round ended, in a few words ("Ana declared (x2)", "void")."""
    who = _name(names, result.winner)
    if result.ending == "void":
        return "void"
    if result.ending == "rami_sec":
        return f"{who}: Rami sec"
    if result.ending == "declare":
        times = f" (x{result.multiplier})" if result.multiplier > 1 else ""
        return f"{who} declared{times}"
    return f"{who} went out"


def score_sheet(
    results: Sequence[RoundResult], names: Sequence[str], width: int = 0
) -> list[StyleAndTextTuples]:
    """Every finished round in a row: what each player paid and how the round ended, then the
    totals; in ``width`` columns (0: any), the names cut to fit and how a round ended on a
    line of its own when the row has no room for it."""
    if not results:
        return [[("class:dim", "No round has finished yet.")]]
    widths = [max(cells(n), 5) for n in names]
    if width and 7 + sum(2 + w for w in widths) > width - 1:
        each = max(4, (width - 1 - 7) // max(1, len(names)) - 2)
        widths = [min(w, each) for w in widths]
    plural = "s" if len(results) != 1 else ""
    head = "  round" + "".join(
        f"  {rjust(clip(n, w), w)}" for n, w in zip(names, widths, strict=True)
    )
    out: list[StyleAndTextTuples] = [
        [("class:heading", f"Scores after {len(results)} round{plural}")],
        [("class:label", head)],
    ]
    for r in results:
        row: StyleAndTextTuples = [("", f"  {r.round:>5}")]
        for seat, w in enumerate(widths):
            paid = r.points[seat] if seat < len(r.points) else 0
            style = "class:good" if seat == r.winner else ""
            row.append((style, f"  {paid:>{w}}"))
        note = ending_note(r, names)
        if width and cells(head) + 2 + cells(note) > width - 1:
            out += [row, [("class:dim", f"{' ' * 9}{note}")]]
        else:
            out.append([*row, ("class:dim", f"  {note}")])
    last = results[-1].totals
    totals = "".join(f"  {(last[s] if s < len(last) else 0):>{w}}" for s, w in enumerate(widths))
    out.append([("class:heading", f"  total{totals}")])
    return out


def listed(names: Sequence[str]) -> str:
    """``A``, ``A and B``, ``A, B and C``."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def game_table(
    totals: Sequence[int], winners: Sequence[int], names: Sequence[str], rounds: int
) -> StyleAndTextTuples:
    """The end of the game: who won, and every total from the lowest."""
    who = listed([_name(names, w) for w in winners]) if winners else "nobody"
    verb = "win" if len(winners) > 1 or who == "You" else "wins"
    best = min(totals) if totals else 0
    plural = "s" if rounds != 1 else ""
    out: StyleAndTextTuples = [
        ("class:heading", f"Game over after {rounds} round{plural}: {who} {verb} with {best}."),
        ("", "\n"),
    ]
    width = max([cells(n) for n in names] + [6])
    order = sorted(range(len(totals)), key=lambda s: (totals[s], s))
    for place, seat in enumerate(order, 1):
        style = "class:good" if seat in winners else ""
        out.append((style, f"  {place}. {ljust(_name(names, seat), width)}  {totals[seat]:>5}"))
        out.append(("", "\n"))
    return out
