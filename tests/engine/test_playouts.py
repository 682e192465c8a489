"""Property tests over seeded random playouts of every variant, 2 to 6 players.

Bots (``random`` and ``greedy`` seats side by side, so that lays, openings and finishes happen
as well as long void rounds) play through the public API: ``Game.new``, ``view``,
``legal_plays``, ``Game.apply``. After every action:

- every card is accounted for: hands + stock + discard pile + melds is the whole deck;
- every action ``legal_plays`` lists is accepted (each is tried on a copy of the game);
- illegal actions made up for the state (a card not held, drawing twice, out of turn, invalid
  melds, missing melds, declaring in a moroccan variant, ...) are refused with a ``RuleError``
  and change nothing: ``state_key()`` and the log are as before;
- at the end, replaying ``(variant, options, seed, log)`` gives the same state.

A separate test checks the views: each seat sees its own hand and nothing concealed beyond it.

The heavier soak (``test_long_random_playouts``) is marked ``slow`` and skipped unless the
environment sets ``RAMI_SLOW=1``: ``RAMI_SLOW=1 .venv/bin/python -m pytest -m slow``.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import random
from collections import Counter
from collections.abc import Iterator

import pytest
import reference as ref
from helpers import KnownCards

from rami.engine import (
    POLICIES,
    AddToMeld,
    Card,
    Declare,
    Discard,
    Draw,
    Game,
    Lay,
    NewMeld,
    NextRound,
    Options,
    Phase,
    RuleError,
    TakeJoker,
    View,
    view,
)
from rami.engine.actions import Action
from rami.engine.plays import discard_completions, legal_plays
from rami.engine.solver import MOROCCAN_VALUES, best_opening, deadwood_split, portuguese_declaration

VARIANTS = ("portuguese", "tallage", "simple")
PLAYERS = (2, 3, 4, 5, 6)
JOKERS = {"portuguese": 2, "tallage": 4, "simple": 4}
#: No round may take more actions than this: the stock is rebuilt at most a few times.
ROUND_ACTION_CAP = 5_000
RUN_SLOW = os.environ.get("RAMI_SLOW") == "1"
slow = pytest.mark.skipif(not RUN_SLOW, reason="slow soak: set RAMI_SLOW=1 to run")

Move = tuple[int | None, Action]


def face_down(game: Game) -> bool:
    """True when the top of the pile is a complete declaration's face-down card."""
    return (
        game.phase in (Phase.ROUND_OVER, Phase.GAME_OVER)
        and bool(game.results)
        and game.results[-1].ending == "declare"
        and game.results[-1].round == game.round
    )


def full_deck(variant: str) -> Counter[int]:
    """2 × 52 faces and the variant's jokers."""
    return Counter({**{c: 2 for c in range(52)}, 52: JOKERS[variant]})


def table_options(variant: str, players: int, rng: random.Random) -> Options:
    """Options drawn at random, so that every table option is played some of the time."""
    opts = Options(
        players=players,
        jokers_per_meld=rng.choice([1, 1, 2]),
        stock_rebuilds=rng.choice([0, 1, 3]),
    )
    if variant == "portuguese":
        return opts.with_(rounds=3, false_declaration=rng.choice(["reveal", "reject"]))
    opts = opts.with_(target=rng.choice([201, 500]), joker_penalty=rng.choice([0, 20, 50]))
    if variant == "tallage":
        return opts.with_(opening=rng.choice([71, 51]))
    return opts.with_(simple_rami_sec=rng.choice([False, True]))


# -- what the checks look at ------------------------------------------------------------------


def cards_accounted(game: Game) -> Counter[int]:
    """Every card the state holds, read from its fields (not from ``cards_in_play``)."""
    counts: Counter[int] = Counter()
    for hand in game.hands:
        counts.update(hand)
    counts.update(game.stock)
    counts.update(game.discard)
    for tm in game.melds:
        counts.update(tm.meld.cards)
    return counts


def fork(game: Game) -> Game:
    """An independent copy of the game, without copying its (long, immutable) log."""
    log = game.log
    game.log = []
    try:
        twin = copy.deepcopy(game)
    finally:
        game.log = log
    twin.log = list(log)
    return twin


def snapshot(game: Game) -> tuple[object, ...]:
    """The state, and the length of the log, to check that a refusal changed nothing."""
    return game.state_key(), len(game.log), game.number


# -- illegal actions, made up for the state ---------------------------------------------------


def illegal_moves(game: Game, rng: random.Random) -> Iterator[tuple[Move, frozenset[str]]]:
    """Moves the rules must refuse now, each with the reasons it may be refused for
    (empty: any ``RuleError``)."""
    n, turn, variant = game.players, game.turn, game.variant.id
    anything: frozenset[str] = frozenset()
    yield (n, Draw("stock")), frozenset({"BAD_SEAT"})
    yield (-1, Discard(Card(0))), frozenset({"BAD_SEAT"})
    if game.phase in (Phase.ROUND_OVER, Phase.GAME_OVER):
        seat = rng.randrange(n)
        yield (seat, Draw("stock")), frozenset({"WRONG_PHASE"})
        if game.hands[seat]:
            yield (seat, Discard(rng.choice(game.hands[seat]))), frozenset({"WRONG_PHASE"})
        if game.phase == Phase.GAME_OVER:
            yield (None, NextRound()), frozenset({"WRONG_PHASE"})
        return
    hand = game.hands[turn]
    held = Counter(hand)
    yield (None, NextRound()), frozenset({"WRONG_PHASE"})
    yield (turn, Discard(99)), anything  # type: ignore[arg-type]
    yield (turn, Draw("nowhere")), anything  # type: ignore[arg-type]
    # Out of turn: the moves that would be fine for the seat to move.
    other = (turn + rng.randrange(1, n)) % n
    yield (other, Draw("stock")), frozenset({"NOT_YOUR_TURN"})
    yield (other, Discard(rng.choice(game.hands[other]))), frozenset({"NOT_YOUR_TURN"})
    # A card not held.
    missing = [c for c in range(53) if not held[c]]
    yield (turn, Discard(Card(rng.choice(missing)))), anything
    # Laying what is no meld, or cards not held, or onto a meld that isn't there.
    if len(hand) >= 3:
        trio = rng.sample(hand, 3)
        if ref.meld_kind(trio, game.options.jokers_per_meld) is None:
            bad = Lay((NewMeld(tuple(trio)),))
            yield (turn, bad), anything
            if game.phase == Phase.DRAW:
                yield (turn, Draw("stock", bad)), anything  # refused whole: no card taken
    faces = [c for c in range(52) if not held[c]]
    rank = rng.choice(faces) % 13
    unheld_set = [s * 13 + rank for s in range(4) if not held[s * 13 + rank]]
    if len(unheld_set) >= 3:
        yield (turn, Lay((NewMeld(tuple(Card(c) for c in unheld_set[:3])),))), anything
    nowhere = len(game.melds) + 1 + rng.randrange(3)
    yield (turn, Lay((AddToMeld(nowhere, (rng.choice(hand),)),))), anything
    if variant != "portuguese":
        yield (turn, Declare(rng.choice(hand))), frozenset({"NO_DECLARING"})
    if game.phase == Phase.PLAY:
        yield (turn, Draw("stock")), frozenset({"ALREADY_DREW", "DEALER_NO_DRAW"})
        yield from _illegal_plays(game, rng)
    else:
        yield (turn, Discard(rng.choice(hand))), frozenset({"MUST_DRAW"})
        if "discard" not in game.draw_sources(turn):
            yield (turn, Draw("discard")), anything
        elif variant == "tallage":
            reasons = frozenset({"MUST_LAY_DISCARD"})
            yield (turn, Draw("discard")), reasons


def _illegal_plays(game: Game, rng: random.Random) -> Iterator[tuple[Move, frozenset[str]]]:
    """Play-phase moves each variant's own rules refuse."""
    turn, variant, opts = game.turn, game.variant.id, game.options
    hand = game.hands[turn]
    jpm = opts.jokers_per_meld
    if variant == "portuguese":
        card = rng.choice(hand)
        rest = list(hand)
        rest.remove(card)
        if (
            opts.false_declaration == "reject"
            and portuguese_declaration(rest, jokers_per_meld=jpm) is None
        ):
            yield (turn, Declare(card)), frozenset({"INCOMPLETE_DECLARATION"})
        return
    split = deadwood_split(hand, MOROCCAN_VALUES, need_run=False, jokers_per_meld=jpm)
    partial = Lay(tuple(NewMeld(m.cards) for m in split.melds))
    opened_at = game.opened_turn[turn]
    if opened_at == game.turn_index:  # a finish (or an opening) was laid this turn
        if split.melds:
            yield (turn, partial), frozenset({"OPENED_THIS_TURN"})
        return
    if variant == "simple":
        if split.melds and len(split.left) >= 2:
            yield (turn, partial), frozenset({"NOT_A_FINISH"})
        return
    if opened_at is None:
        if game.melds:
            card = rng.choice(hand)
            yield (turn, Lay((AddToMeld(1, (card,)),))), frozenset({"NOT_OPENED"})
            yield (turn, Lay((TakeJoker(1, card),))), frozenset({"NOT_OPENED"})
        opening = best_opening(hand, jokers_per_meld=jpm)
        too_low = opening is not None and (
            opening.score < opts.opening or opening.score <= game.bar
        )
        if opening is not None and too_low and len(opening.left) >= 2:
            lay = Lay(tuple(NewMeld(m.cards) for m in opening.melds))
            yield (turn, lay), frozenset({"OPENING_TOO_LOW", "OPENING_BELOW_BAR"})


def check_refusals(game: Game, rng: random.Random, stats: Counter[str]) -> None:
    """Every made-up illegal move is refused, for the right reason, changing nothing."""
    for (seat, action), reasons in illegal_moves(game, rng):
        before = snapshot(game)
        with pytest.raises(RuleError) as refusal:
            game.apply(seat, action)
        assert snapshot(game) == before, f"refused {action!r} but the state changed"
        if reasons:
            assert refusal.value.reason in reasons, (action, refusal.value)
        stats["refused"] += 1


# -- playing ----------------------------------------------------------------------------------


def check_legal_plays(game: Game, plays: list[Action], stats: Counter[str]) -> None:
    """Every listed play is accepted, and leaves every card accounted for."""
    deck = full_deck(game.variant.id)
    for action in plays:
        twin = fork(game)
        twin.apply(game.turn, action)  # raises if a listed play is refused
        assert cards_accounted(twin) == deck, f"after {action!r}"
        stats["legal tried"] += 1


def _maybe_false_declaration(game: Game, action: Action, rng: random.Random) -> Action:
    """Now and then, a portuguese player declares an incomplete hand instead of discarding:
    legal under ``false_declaration=reveal`` though no bot plays it (RULES.md §2)."""
    if not isinstance(action, Discard) or rng.random() > 0.05:
        return action
    rest = list(game.hands[game.turn])
    rest.remove(action.card)
    if portuguese_declaration(rest, jokers_per_meld=game.options.jokers_per_meld) is not None:
        return action
    return Declare(action.card)


def play_game(
    variant: str,
    players: int,
    seed: int,
    *,
    policies: tuple[str, ...] = ("greedy", "random"),
    max_rounds: int = 3,
    all_legal: bool = True,
    illegal: bool = True,
) -> Counter[str]:
    """Play one seeded game (at most ``max_rounds`` rounds) checking every property above."""
    rng = random.Random(f"{variant}/{players}/{seed}")
    options = table_options(variant, players, rng)
    game, _ = Game.new(variant, options, seed)
    deck = full_deck(variant)
    bots = [POLICIES[policies[s % len(policies)]] for s in range(players)]
    stats: Counter[str] = Counter()
    seen = KnownCards(players)
    in_round = 0
    while True:
        assert cards_accounted(game) == deck
        assert game.known == seen.known()
        stats["known"] += sum(map(len, game.known))
        if illegal:
            check_refusals(game, rng, stats)
        if game.phase == Phase.GAME_OVER:
            break
        if game.phase == Phase.ROUND_OVER:
            if game.round >= max_rounds:
                break
            seen.see(game.apply(None, NextRound()))
            in_round = 0
            continue
        seat = game.turn
        v = view(game, seat)
        plays = legal_plays(v)
        assert plays, "the seat to move has no legal play"
        if all_legal:
            check_legal_plays(game, plays, stats)
        action = bots[seat](v, rng)
        if variant == "portuguese" and options.false_declaration == "reveal":
            action = _maybe_false_declaration(game, action, rng)
        seen.see(game.apply(seat, action))
        stats["actions"] += 1
        stats[type(action).__name__] += 1
        in_round += 1
        assert in_round <= ROUND_ACTION_CAP, "a round does not end"
    assert game.phase in (Phase.ROUND_OVER, Phase.GAME_OVER)
    stats.update(f"ending {r.ending}" for r in game.results)
    stats["false declarations"] = sum(1 for _, a in game.log if isinstance(a, Declare)) - sum(
        1 for r in game.results if r.ending == "declare"
    )
    replayed = Game.replay(variant, options, seed, game.log)
    assert replayed.state_key() == game.state_key()
    return stats


@pytest.mark.parametrize("players", PLAYERS)
@pytest.mark.parametrize("variant", VARIANTS)
def test_playouts_keep_every_card_accept_legal_refuse_illegal_and_replay(
    variant: str, players: int
) -> None:
    stats = play_game(variant, players, seed=players)
    assert stats["actions"] > 50
    if variant != "tallage":  # (tallage lays a discard taken in the same move: none stay)
        assert stats["known"] > 0  # cards were known held: the check above saw some
    assert stats["legal tried"] >= stats["actions"]
    assert stats["refused"] > stats["actions"]


def test_playouts_reach_every_kind_of_round_end() -> None:
    """The playouts above are worth something only if rounds end in every way."""
    total: Counter[str] = Counter()
    for variant in VARIANTS:
        for seed, policies in enumerate([("greedy", "random"), ("random",), ("greedy",)]):
            total += play_game(
                variant, 2 + seed, seed + 100, policies=policies, all_legal=False, illegal=False
            )
    for ending in ("declare", "rami", "rami_sec", "void"):
        assert total[f"ending {ending}"] > 0, total
    assert total["false declarations"] > 0, total


@slow
@pytest.mark.slow
@pytest.mark.parametrize(
    ("policies", "seeds", "max_rounds"),
    [(("random",), 1, 2), (("greedy",), 3, 6), (("strong", "random"), 3, 6)],
)
@pytest.mark.parametrize("variant", VARIANTS)
def test_long_random_playouts(
    variant: str, policies: tuple[str, ...], seeds: int, max_rounds: int
) -> None:
    """The same checks over longer games, more seeds and the ``strong`` bot (a few minutes)."""
    for players in PLAYERS:
        for seed in range(1000, 1000 + seeds):
            play_game(variant, players, seed, policies=policies, max_rounds=max_rounds)


# -- views ------------------------------------------------------------------------------------

#: Every field of a View, each checked by hand for concealed cards: only ``hand`` (the seat's
#: own) and ``drawn`` (the card it drew itself) are concealed from others. A new field fails
#: this test until it is added here and to the checks below.
VIEW_FIELDS = {
    "variant", "options", "seat", "players", "number", "round", "dealer", "turn", "phase",
    "hand", "drawn", "hand_sizes", "stock_size", "discard_top", "discard_size", "melds",
    "opened", "known", "bar", "first_circuit", "rebuilds", "totals", "results", "winners",
    "draw_sources", "can_lay", "can_declare", "discard_lays",
}  # fmt: skip
#: What a seat's view may hold that a spectator's doesn't: its own hand and affordances.
PERSONAL = {
    "seat": None,
    "hand": None,
    "drawn": None,
    "draw_sources": (),
    "can_lay": False,
    "can_declare": False,
    "discard_lays": None,
}


def cards_in(value: object) -> Iterator[Card]:
    """Every card anywhere inside a view: in fields, tuples, dicts, melds and results."""
    if isinstance(value, Card):
        yield value
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from cards_in(getattr(value, f.name))
    elif isinstance(value, tuple | list | set | frozenset):
        for item in value:
            yield from cards_in(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from cards_in(item)


def check_views(game: Game, seen: KnownCards) -> None:
    """``seen``: what the public events say each seat holds (the only hand cards a spectator
    may see, and every watcher does)."""
    spectator = view(game, None)
    assert spectator.hand is None and spectator.seat is None and spectator.drawn is None
    assert list(spectator.known) == seen.known()
    public = [c for tm in game.melds for c in tm.meld.cards]
    public += [c for r in game.results for h in r.hands for c in h]
    public += [c for held in seen.known() for c in held]
    if game.discard and not face_down(game):  # a complete declaration's card lies face down
        public.append(game.discard[-1])
    assert Counter(cards_in(spectator)) == Counter(public)
    for seat in range(game.players):
        v = view(game, seat)
        assert v.seat == seat
        assert v.hand == tuple(game.hands[seat])
        if v.drawn is not None:
            assert seat == game.turn and v.drawn == game.drawn
        assert dataclasses.replace(v, **PERSONAL) == spectator


def test_view_fields_are_all_audited() -> None:
    assert {f.name for f in dataclasses.fields(View)} == VIEW_FIELDS
    assert set(PERSONAL) <= VIEW_FIELDS


def view_fields(game: Game, seat: int | None) -> dict[str, object]:
    """What each field of ``view(game, seat)`` must hold, read from the game by name."""
    mine = seat is not None and seat == game.turn
    return {
        "variant": game.variant,
        "options": game.options,
        "seat": seat,
        "players": game.players,
        "number": game.number,
        "round": game.round,
        "dealer": game.dealer,
        "turn": game.turn,
        "phase": game.phase,
        "hand": None if seat is None else tuple(game.hands[seat]),
        "drawn": game.drawn if mine and game.phase == Phase.PLAY else None,
        "hand_sizes": tuple(len(h) for h in game.hands),
        "stock_size": len(game.stock),
        # The card of a complete declaration lies face down until the next deal.
        "discard_top": None if face_down(game) else game.discard[-1] if game.discard else None,
        "discard_size": len(game.discard),
        "melds": tuple(game.melds),
        "opened": tuple(game.has_opened(s) for s in range(game.players)),
        "known": tuple(game.known),
        "bar": game.bar,
        "first_circuit": game.first_circuit(),
        "rebuilds": game.rebuilds,
        "totals": tuple(game.totals),
        "results": tuple(game.results),
        "winners": game.winners,
        "draw_sources": () if seat is None else usable_sources(game, seat),
        "can_lay": seat is not None and game.can_lay(seat),
        "can_declare": seat is not None and game.can_declare(seat),
        "discard_lays": None if seat is None else discard_lays(game, seat),
    }


def discard_lays(game: Game, seat: int) -> tuple[Lay, ...] | None:
    """Tallage, when the rules let the seat draw from the discard: the lays that would take
    it, found afresh (not read from the view); else None."""
    sources = tuple(game.draw_sources(seat))
    if "discard" not in sources or not game.variant.must_lay_discard:
        return None
    whole = dataclasses.replace(view(game, seat), draw_sources=sources, discard_lays=None)
    return tuple(discard_completions(whole))


def usable_sources(game: Game, seat: int) -> tuple[str, ...]:
    """Where the rules let the seat draw from, less tallage's discard when no lay this turn
    could take it (it is taken only with one)."""
    sources = tuple(game.draw_sources(seat))
    if discard_lays(game, seat) == ():
        return tuple(s for s in sources if s != "discard")
    return sources


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_field_of_a_view_shows_its_part_of_the_game(variant: str) -> None:
    """Each field holds what its name says (``view`` fills them by position)."""
    rng = random.Random(7)
    game, _ = Game.new(variant, table_options(variant, 3, rng), seed=7)
    while game.round <= 2 and game.phase != Phase.GAME_OVER:
        for seat in (*range(game.players), None):
            v = view(game, seat)
            assert {f.name: getattr(v, f.name) for f in dataclasses.fields(View)} == view_fields(
                game, seat
            )
        if game.phase == Phase.ROUND_OVER:
            game.apply(None, NextRound())
            continue
        game.apply(game.turn, POLICIES["greedy"](view(game, game.turn), rng))


@pytest.mark.parametrize("variant", VARIANTS)
def test_views_never_show_another_seats_hand(variant: str) -> None:
    for players in (2, 6):
        rng = random.Random(players)
        game, _ = Game.new(variant, table_options(variant, players, rng), seed=players)
        seen = KnownCards(players)
        bots = [POLICIES["greedy" if s % 2 else "random"] for s in range(players)]
        while game.round <= 2 and game.phase != Phase.GAME_OVER:
            check_views(game, seen)
            if game.phase == Phase.ROUND_OVER:
                seen.see(game.apply(None, NextRound()))
                continue
            seen.see(game.apply(game.turn, bots[game.turn](view(game, game.turn), rng)))
        check_views(game, seen)
