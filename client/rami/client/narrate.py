"""Events in sentences: what the person reads above the prompt as the game goes on.

``Sara laid [1] Q♣ K♣ A♣ and [2] 8♣ 8♦ 8♥ and opened with 79; the bar is now 79.``

:func:`narrate` is pure: an event (the engine's, or the table's) and a :class:`Scene` — the
names, the watcher's seat, the melds as they were before the event — give lines of styled
text. The live client and the replay use it alike.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from prompt_toolkit.formatted_text import StyleAndTextTuples

from rami.engine import JOKER, Card, Meld, Variant
from rami.engine import events as ev

from . import tableevents as te
from .cardtext import card_fragments, cards_fragments, meld_fragments
from .look import Look
from .safetext import safe
from .scores import ending_text, game_table, round_table

__all__ = ["Scene", "narrate"]

Line = StyleAndTextTuples


@dataclass(frozen=True, slots=True)
class Scene:
    """What the narrator needs to know besides the event."""

    names: Sequence[str]
    look: Look
    #: The watcher's seat (its name is "You"), or None.
    me: int | None = None
    #: The melds on the table before the event, by number.
    melds_before: Mapping[int, Meld] = field(default_factory=dict)
    #: The card the watcher drew in this update (only its own draws are known).
    drawn: Card | None = None
    #: Rounds played, for the end of the game.
    rounds: int = 0
    #: Every hand is face up (a replay): ``drawn`` is told whoever drew it.
    open_hands: bool = False
    #: The game's rules, to tell which cards a declaration made the others pay for.
    variant: Variant | None = None
    jokers_per_meld: int = 1
    #: Who played the watcher's seat, when not the watcher (the moves made while they were
    #: away, told when they come back): its name instead of "You".
    stand_in: str = ""
    #: A game is under way (a player who leaves it leaves the seat to the server).
    in_game: bool = False

    def name(self, seat: int) -> str:
        """Who made a seat's move ("You" for the watcher, or who played for them)."""
        if seat == self.me:
            return self.stand_in or "You"
        return self.who(seat)

    def who(self, seat: int) -> str:
        """Whose a seat is ("You" for the watcher, even for a round the server played for
        them: the deal, the round's score and the standings are theirs)."""
        if seat == self.me:
            return "You"
        return self.names[seat] if 0 <= seat < len(self.names) else f"Seat {seat}"

    def verb(self, seat: int, plain: str, third: str) -> str:
        """``deal`` for "You", ``deals`` for everyone else."""
        return plain if seat == self.me else third


def _line(*parts: str | Line) -> Line:
    out: Line = []
    for p in parts:
        if isinstance(p, str):
            out.append(("", p))
        else:
            out.extend(p)
    return out


def _numbered(number: int, meld: Meld, look: Look) -> Line:
    return [("class:label", f"[{number}] "), *meld_fragments(meld, look)]


def _change(number: int, after: Meld, before: Meld | None, look: Look) -> Line:
    """How one meld on the table changed: an addition, or a joker taken back."""
    if before is None:
        return _line(f"changed [{number}] (now ", meld_fragments(after, look), ")")
    added = Counter(after.cards) - Counter(before.cards)
    removed = Counter(before.cards) - Counter(after.cards)
    if removed[JOKER]:
        # One card takes each joker back, one that the joker stood for; any others were added.
        rest = sorted(c for c in added.elements() if c != JOKER)
        if before.kind == "set":
            stood_for = {Card.of(before.rank, suit) for suit in before.missing_suits()}
        else:
            stood_for = set(before.joker_cards())
        took: list[Card] = []
        for _ in range(removed[JOKER]):
            card = next((c for c in rest if c in stood_for), rest[0] if rest else None)
            if card is None:
                break
            rest.remove(card)
            took.append(card)
        line = _line(f"took back the joker from [{number}] with ", cards_fragments(took, look))
        if not rest:
            return line
        return _line(
            line,
            " and added ",
            cards_fragments(rest, look),
            " to it (now ",
            meld_fragments(after, look),
            ")",
        )
    return _line(
        "added ",
        cards_fragments(sorted(added.elements()), look),
        f" to [{number}] (now ",
        meld_fragments(after, look),
        ")",
    )


def _laid(e: ev.Laid, scene: Scene) -> Line:
    look = scene.look
    melds = dict(e.melds)
    parts: list[Line] = []
    if e.new_melds:
        laid: Line = [("", "laid ")]
        for i, n in enumerate(e.new_melds):
            if i:
                laid.append(("", " and " if i == len(e.new_melds) - 1 else ", "))
            laid += _numbered(n, melds[n].meld, look)
        parts.append(laid)
    parts += [_change(n, melds[n].meld, scene.melds_before.get(n), look) for n in e.changed_melds]
    out: Line = [("class:me" if e.seat == scene.me else "", scene.name(e.seat)), ("", " ")]
    for i, part in enumerate(parts):
        if i:
            out.append(("", " and " if i == len(parts) - 1 else ", "))
        out += part
    # A joker taken back and laid again on the meld it came from leaves that meld's jokers as
    # they were: the changes above can't show it, the count of jokers taken does.
    shown = sum(
        (Counter(before.cards) - Counter(melds[n].meld.cards))[JOKER]
        for n in e.changed_melds
        if (before := scene.melds_before.get(n)) is not None
    )
    known = all(n in scene.melds_before for n in e.changed_melds)
    again = e.jokers_taken - shown if known else 0
    if again == 1:
        which = "its joker" if len(parts) == 1 and e.changed_melds else "a joker"
        out.append(("", f", taking {which} back and laying it again"))
    elif again > 1:
        out.append(("", f", taking {again} jokers back and laying them again"))
    # A whole-hand finish needs no opening and ends the round: a bar it sets is met by nobody.
    if e.opened and not e.finish:
        out.append(("class:good", f" and opened with {e.opening_value}; the bar is now {e.bar}"))
    if e.finish:
        out.append(("class:good", ", leaving one card to discard"))
    return [*out, ("", ".")]


def _drew(e: ev.Drew, scene: Scene) -> Line:
    who = scene.name(e.seat)
    if e.source == "discard" and e.card is not None:
        return _line(f"{who} took ", card_fragments(e.card, scene.look), " from the discard pile.")
    if (e.seat == scene.me or scene.open_hands) and scene.drawn is not None:
        return _line(f"{who} drew ", card_fragments(scene.drawn, scene.look), " from the stock.")
    return _line(f"{who} drew from the stock.")


def _declared(e: ev.Declared, scene: Scene) -> list[Line]:
    who = scene.name(e.seat)
    look = scene.look
    if e.complete:
        times = f" (x{e.multiplier})" if e.multiplier > 1 else ""
        melds: Line = []
        for m in e.melds:
            melds += [("", "  "), *meld_fragments(m, look)]
        return [_line(f"{who} declared a complete hand{times}:"), melds]
    turned: Line = card_fragments(e.card, look) if e.card is not None else [("", "the card")]
    return [
        _line(
            f"{who} declared, but the hand is not complete: ", turned, " is turned up as a discard."
        ),
        _line("  ", cards_fragments(e.cards, look)),
    ]


def _table_event(e: te.TableEvent, scene: Scene) -> list[Line]:
    if isinstance(e, te.Joined):
        if e.seat == scene.me:
            return []  # the join's own answer said it: "You sit at seat N: ..."
        who = safe(e.name, 24)
        kind = " (a bot)" if e.bot else ""
        return [_line(f"{who}{kind} sat down at seat {e.seat}.")]
    if isinstance(e, te.Left):
        if scene.in_game:
            # The seat stays theirs: the server plays it until they take it back. (They left,
            # or their connection died and stayed down: the event does not say which.)
            if e.seat == scene.me:
                return [_line("You went away: the server plays your seat until you take it back.")]
            who = scene.who(e.seat)
            return [_line(f"{who} went away: the server plays the seat until they are back.")]
        return [_line(f"{scene.who(e.seat)} left the table.")]
    if isinstance(e, te.Returned):
        return [_line(f"{scene.who(e.seat)} came back.")]
    if isinstance(e, te.Started):
        names = [safe(n, 24) for n in e.names]
        listed = ", ".join(names[:-1]) + f" and {names[-1]}" if len(names) > 1 else "".join(names)
        return [[("class:heading", f"The game begins: {listed}.")]]
    if isinstance(e, te.Chatted):
        style = "class:me" if e.seat == scene.me else "class:chat"
        return [[(style, f"{scene.who(e.seat)}: "), ("", safe(e.text))]]
    if isinstance(e, te.TimedOut):
        whom = "you" if e.seat == scene.me else "them"
        return [
            [("class:warn", f"{scene.who(e.seat)} ran out of time; the server played for {whom}.")]
        ]
    return []


def _round_started(e: ev.RoundStarted, scene: Scene) -> Line:
    dealer = scene.who(e.dealer)
    text = f"Round {e.round}: {dealer} {scene.verb(e.dealer, 'deal', 'deals')}"
    if e.first_player == e.dealer:
        text += f" and {scene.verb(e.dealer, 'play', 'plays')} first"
    else:
        first = scene.who(e.first_player)
        text += f"; {first} {scene.verb(e.first_player, 'play', 'plays')} first"
    out: Line = [("class:heading", text)]
    if e.discard_top is not None:
        out += _line("; ", card_fragments(e.discard_top, scene.look), " is turned up.")
    return out


def narrate(event: ev.Event | te.TableEvent, scene: Scene) -> list[Line]:
    """The lines that tell ``event`` (none for an event not worth a line)."""
    look = scene.look
    names = [scene.who(s) for s in range(len(scene.names))]
    if isinstance(event, ev.RoundStarted):
        return [_round_started(event, scene)]
    if isinstance(event, ev.Drew):
        return [_drew(event, scene)]
    if isinstance(event, ev.Laid):
        return [_laid(event, scene)]
    if isinstance(event, ev.Discarded):
        return [
            _line(f"{scene.name(event.seat)} discarded ", card_fragments(event.card, look), ".")
        ]
    if isinstance(event, ev.Declared):
        return _declared(event, scene)
    if isinstance(event, ev.StockRebuilt):
        return [
            [
                (
                    "class:warn",
                    f"The stock ran out and was rebuilt from the discard pile "
                    f"({event.stock_size} cards; rebuild {event.rebuilds}).",
                )
            ]
        ]
    if isinstance(event, ev.RoundEnded):
        return [
            [("class:heading", ending_text(event.result, names))],
            *_split_lines(
                round_table(event.result, names, look, scene.variant, scene.jokers_per_meld)
            ),
        ]
    if isinstance(event, ev.GameEnded):
        table = game_table(event.totals, event.winners, names, scene.rounds)
        return _split_lines(table)
    return _table_event(event, scene)


def _split_lines(fragments: StyleAndTextTuples) -> list[Line]:
    """Fragments cut into lines at their newlines (the last empty line dropped)."""
    lines: list[Line] = [[]]
    for style, text, *_ in fragments:
        pieces = text.split("\n")
        for i, piece in enumerate(pieces):
            if i:
                lines.append([])
            if piece:
                lines[-1].append((style, piece))
    return [ln for ln in lines if ln] if len(lines) > 1 else lines
