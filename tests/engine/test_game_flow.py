"""The flow of a game (RULES.md §2–§5): deals, turns, dealers, the stock, the end, options."""

from __future__ import annotations

from dataclasses import FrozenInstanceError
from typing import Any

import pytest
from helpers import deal, play, refused, stacked_deck

from rami.engine import (
    JOKER,
    Card,
    Discard,
    Draw,
    Event,
    Game,
    MalformedAction,
    NextRound,
    Options,
    Phase,
    get_variant,
    view,
)
from rami.engine.cards import FACES, full_deck
from rami.engine.events import GameEnded, RoundEnded, RoundStarted, StockRebuilt

#: Complete with a set (×1): the first player draws Q♦ and declares it.
COMPLETE = "As 2s 3s 5c 5d 5h 9h 10h Jh Qh 6s 7s 8s"


# -- the deal -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("variant", "deck", "hand", "dealer_hand"),
    [("portuguese", 106, 13, 13), ("tallage", 108, 14, 15), ("simple", 108, 13, 14)],
)
@pytest.mark.parametrize("players", [2, 3, 4, 5, 6])
def test_each_variant_deals_its_hand_sizes_and_turns_up_one_card(
    variant: str, deck: int, hand: int, dealer_hand: int, players: int
) -> None:
    game, events = Game.new(variant, Options(players=players), seed=5)
    assert game.dealer == 0
    assert [len(h) for h in game.hands] == [dealer_hand] + [hand] * (players - 1)
    assert len(game.discard) == 1
    assert len(game.stock) == deck - dealer_hand - hand * (players - 1) - 1
    assert sorted(game.cards_in_play()) == sorted(full_deck(2, deck - 104))
    started = events[0]
    assert isinstance(started, RoundStarted) and started.discard_top == game.discard[-1]


@pytest.mark.parametrize("variant", ["portuguese", "tallage", "simple"])
def test_cards_are_dealt_one_at_a_time_from_the_dealers_left(variant: str) -> None:
    jokers = get_variant(variant).jokers
    deck = [*FACES, *FACES, *[JOKER] * jokers]  # the first 52 cards all different
    game, _ = Game.new(variant, Options(players=3), seed=0, decks=[deck])
    size = game.variant.hand_size
    assert sorted(game.hands[1]) == sorted(deck[0 : 3 * size : 3])
    assert sorted(game.hands[2]) == sorted(deck[1 : 3 * size : 3])
    dealer = [*deck[2 : 3 * size : 3], *deck[3 * size : 3 * size + game.variant.dealer_extra]]
    assert sorted(game.hands[0]) == sorted(dealer)
    turned = 3 * size + game.variant.dealer_extra
    assert game.discard == [deck[turned]]
    assert game.stock[-1] == deck[turned + 1]  # the top of the stock is the next card


def test_the_first_player_is_left_of_the_dealer_in_portuguese() -> None:
    game, events = Game.new("portuguese", Options(players=4), seed=3)
    assert (game.dealer, game.turn, game.phase) == (0, 1, Phase.DRAW)
    assert isinstance(events[0], RoundStarted) and events[0].first_player == 1


@pytest.mark.parametrize("variant", ["tallage", "simple"])
def test_the_dealer_plays_first_without_drawing_in_moroccan_games(variant: str) -> None:
    game, events = Game.new(variant, Options(players=4), seed=3)
    assert (game.dealer, game.turn, game.phase) == (0, 0, Phase.PLAY)
    assert isinstance(events[0], RoundStarted) and events[0].first_player == 0
    refused(game, 0, Draw("stock"), "DEALER_NO_DRAW")


@pytest.mark.parametrize("variant", ["portuguese", "tallage", "simple"])
def test_play_goes_clockwise_to_the_next_seat(variant: str) -> None:
    game, _ = Game.new(variant, Options(players=3), seed=9)
    seats = []
    for _ in range(6):
        seat = game.turn
        seats.append(seat)
        if game.phase == Phase.DRAW:
            play(game, seat, "draw stock")
        play(game, seat, Discard(game.hands[seat][-1]))
    start = seats[0]
    assert seats == [(start + i) % 3 for i in range(6)]


# -- turns --------------------------------------------------------------------------------------


def test_only_the_player_to_move_acts_and_a_turn_is_draw_then_discard() -> None:
    game, _ = Game.new("portuguese", Options(players=3), seed=4)
    card = game.hands[1][0]
    refused(game, 2, "draw stock", "NOT_YOUR_TURN")
    refused(game, 1, Discard(card), "MUST_DRAW")
    refused(game, 7, "draw stock", "BAD_SEAT")
    play(game, 1, "draw stock")
    refused(game, 1, "draw stock", "ALREADY_DREW")
    missing = next(c for c in range(52) if c not in game.hands[1])
    refused(game, 1, Discard(Card(missing)), "CARD_NOT_IN_HAND")
    play(game, 1, Discard(card))
    assert game.discard[-1] == card and game.turn == 2


@pytest.mark.parametrize("variant", ["tallage", "simple"])
def test_nobody_takes_the_discard_during_the_first_circuit_in_moroccan_games(variant: str) -> None:
    game, _ = Game.new(variant, Options(players=3), seed=6)
    for seat in (0, 1, 2):
        assert game.first_circuit()
        if seat:
            assert game.draw_sources(seat) == ["stock"]
            refused(game, seat, "draw discard", "FIRST_CIRCUIT")
            play(game, seat, "draw stock")
        play(game, seat, Discard(game.hands[seat][0]))
    assert not game.first_circuit()
    assert game.draw_sources(0) == ["stock", "discard"]


def test_everyone_may_take_the_discard_from_the_first_turn_in_portuguese() -> None:
    game, _ = Game.new("portuguese", Options(players=3), seed=6)
    for seat in (1, 2, 0):
        assert game.draw_sources(seat) == ["stock", "discard"]
        play(game, seat, "draw discard")
        play(game, seat, Discard(game.hands[seat][0]))


def test_a_player_holding_one_card_takes_from_the_stock() -> None:
    seat0 = "2c 3c 4c 5c 6c 2d 2h 2s 9h 10h Jh Qh Kh Ks 5d"
    game = deal("tallage", [seat0, ""], "Ac", "8h 7c")
    play(game, 0, "lay 2c 3c 4c 5c 6c, 2d 2h 2s, 9h 10h Jh Qh Kh")
    play(game, 0, "discard 5d")
    play(game, 1, "draw stock")
    play(game, 1, "discard 8h")
    assert len(game.hands[0]) == 1
    assert game.draw_sources(0) == ["stock"]
    refused(game, 0, "draw discard", "ONE_CARD")
    play(game, 0, "draw stock")
    assert len(game.hands[0]) == 2


def test_next_round_is_refused_while_a_round_is_played() -> None:
    game, _ = Game.new("tallage", Options(players=2), seed=4)
    refused(game, None, NextRound(), "WRONG_PHASE")


# -- the stock runs out -------------------------------------------------------------------------


def play_out(game: Game) -> list[Event]:
    """Every player draws from the stock and discards what they drew until the round ends."""
    events: list[Event] = []
    while game.phase not in (Phase.ROUND_OVER, Phase.GAME_OVER):
        seat = game.turn
        if game.phase == Phase.DRAW:
            events += game.apply(seat, Draw("stock"))
            card = game.drawn
        else:  # a moroccan dealer's first turn
            card = game.hands[seat][0]
        assert card is not None
        before = sorted(game.cards_in_play())
        step = game.apply(seat, Discard(card))
        events += step
        if any(isinstance(e, StockRebuilt) for e in step):
            assert game.discard == [card]  # the top discard stays
            assert sorted(game.cards_in_play()) == before
    return events


@pytest.mark.parametrize("variant", ["portuguese", "tallage", "simple"])
def test_the_stock_is_rebuilt_3_times_then_the_round_is_void(variant: str) -> None:
    game, _ = Game.new(variant, Options(players=2), seed=12)
    pile_before = len(game.discard)
    events = play_out(game)
    rebuilt = [e for e in events if isinstance(e, StockRebuilt)]
    assert [e.rebuilds for e in rebuilt] == [1, 2, 3]
    assert rebuilt[0].stock_size > pile_before
    r = next(e for e in events if isinstance(e, RoundEnded)).result
    assert (r.ending, r.winner) == ("void", None)
    assert r.points == (0, 0) and game.totals == [0, 0]


@pytest.mark.parametrize("rebuilds", [0, 1])
def test_option_stock_rebuilds_sets_how_often_the_stock_is_rebuilt(rebuilds: int) -> None:
    game, _ = Game.new("portuguese", Options(players=2, stock_rebuilds=rebuilds), seed=12)
    stock = len(game.stock)
    events = play_out(game)
    assert sum(isinstance(e, StockRebuilt) for e in events) == rebuilds
    assert game.results[-1].ending == "void"
    draws = sum(1 for e in events if type(e).__name__ == "Drew")
    # Every stock card is drawn: the dealt stock, then each rebuilt stock.
    assert draws == stock + sum(e.stock_size for e in events if isinstance(e, StockRebuilt))


# -- rounds, dealers and the end of the game ----------------------------------------------------


def portuguese_rounds(rounds: int, players: int = 3) -> tuple[Game, list[Event]]:
    """A portuguese game where each round's first player declares at once."""
    decks = [
        stacked_deck(
            "portuguese",
            [COMPLETE if s == (r + 1) % players else "" for s in range(players)],
            "Ac",
            "Qd",
            dealer=r % players,
        )
        for r in range(rounds)
    ]
    game, events = Game.new("portuguese", Options(players=players, rounds=rounds), decks=decks)
    for r in range(rounds):
        assert game.round == r + 1 and game.dealer == r % players
        first = (game.dealer + 1) % players
        assert game.turn == first
        events += play(game, first, "draw stock")
        events += play(game, first, "declare Qd")
        assert game.results[-1].winner == first
        if r + 1 < rounds:
            assert game.phase == Phase.ROUND_OVER
            refused(game, first, "draw stock", "WRONG_PHASE")
            events += game.apply(None, NextRound())
    return game, events


def test_the_dealer_moves_one_seat_clockwise_every_round() -> None:
    _, events = portuguese_rounds(4)
    starts = [e for e in events if isinstance(e, RoundStarted)]
    dealers = [(e.round, e.dealer, e.first_player) for e in starts]
    assert dealers == [(1, 0, 1), (2, 1, 2), (3, 2, 0), (4, 0, 1)]


def test_a_portuguese_game_ends_after_its_rounds_and_the_lowest_total_wins() -> None:
    game, events = portuguese_rounds(3)
    assert game.phase == Phase.GAME_OVER
    assert len(game.results) == 3
    low = min(game.totals)
    assert game.winners == tuple(s for s, t in enumerate(game.totals) if t == low)
    ended = [e for e in events if isinstance(e, GameEnded)]
    assert len(ended) == 1 and ended[0].winners == game.winners
    assert ended[0].totals == tuple(game.totals)
    refused(game, None, NextRound(), "WRONG_PHASE")


def test_the_default_portuguese_game_has_5_rounds() -> None:
    assert Options().rounds == 5
    game, _ = portuguese_rounds(5)
    assert game.phase == Phase.GAME_OVER and game.round == 5


def test_equal_totals_share_the_win() -> None:
    game, _ = Game.new("portuguese", Options(players=3, rounds=1, stock_rebuilds=0), seed=2)
    play_out(game)
    assert game.phase == Phase.GAME_OVER
    assert game.totals == [0, 0, 0] and game.winners == (0, 1, 2)


RAMI_SEC = "Ac 2c 3c 4c 5c 2d 2h 2s 4h 5h 6h 3d 3s 3h Ks"
LAY_RAMI_SEC = "lay Ac 2c 3c 4c 5c, 2d 2h 2s, 4h 5h 6h, 3d 3s 3h"


def tallage_rami_secs(rounds: int, **options: Any) -> Game:
    """Each round the dealer lays the whole hand at once: the others pay 200 each."""
    decks = [
        stacked_deck(
            "tallage", [RAMI_SEC if s == r % 3 else "" for s in range(3)], "Ad", dealer=r % 3
        )
        for r in range(rounds)
    ]
    game, _ = Game.new("tallage", Options(players=3, **options), decks=decks)
    for r in range(rounds):
        if r:
            game.apply(None, NextRound())
        assert game.dealer == r % 3
        play(game, game.dealer, LAY_RAMI_SEC)
        play(game, game.dealer, "discard Ks")
        assert game.results[-1].ending == "rami_sec"
    return game


def test_a_moroccan_game_ends_after_the_round_in_which_a_total_reaches_the_target() -> None:
    game = tallage_rami_secs(1)
    assert game.totals == [0, 200, 200] and game.phase == Phase.ROUND_OVER  # 200 < 201
    game = tallage_rami_secs(2)
    assert game.totals == [200, 200, 400]
    assert game.phase == Phase.GAME_OVER
    assert game.winners == (0, 1)  # equal lowest totals share the win


def test_option_target_500_plays_on_past_201() -> None:
    game = tallage_rami_secs(2, target=500)
    assert game.phase == Phase.ROUND_OVER
    game = tallage_rami_secs(3, target=500)
    assert game.totals == [400, 400, 400] and game.phase == Phase.ROUND_OVER
    game = tallage_rami_secs(4, target=500)
    assert game.totals == [400, 600, 600]
    assert game.phase == Phase.GAME_OVER and game.winners == (0,)


def test_option_round_cap_ends_a_moroccan_game_after_that_many_rounds() -> None:
    game = tallage_rami_secs(1, round_cap=1)
    assert game.phase == Phase.GAME_OVER
    assert game.winners == (0,)


def test_a_void_round_still_counts_toward_the_round_cap() -> None:
    game, _ = Game.new("simple", Options(players=2, stock_rebuilds=0, round_cap=1), seed=8)
    play_out(game)
    assert game.phase == Phase.GAME_OVER and game.winners == (0, 1)


# -- options ------------------------------------------------------------------------------------


def test_the_default_options_are_the_rules() -> None:
    assert Options().to_dict() == {
        "players": 4,
        "rounds": 5,
        "target": 201,
        "opening": 71,
        "joker_penalty": 20,
        "jokers_per_meld": 1,
        "false_declaration": "reveal",
        "stock_rebuilds": 3,
        "simple_rami_sec": False,
        "turn_seconds": 0,
        "round_cap": 50,
    }


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("players", 1),
        ("players", 7),
        ("players", True),
        ("rounds", 0),
        ("target", 300),
        ("opening", 60),
        ("joker_penalty", -1),
        ("jokers_per_meld", 3),
        ("jokers_per_meld", True),
        ("false_declaration", "maybe"),
        ("stock_rebuilds", -1),
        ("simple_rami_sec", "yes"),
        ("simple_rami_sec", 1),
        ("turn_seconds", -1),
        ("turn_seconds", 3601),
        ("round_cap", 0),
    ],
)
def test_an_option_out_of_its_range_is_refused(name: str, value: object) -> None:
    with pytest.raises(MalformedAction) as info:
        Options(**{name: value})  # type: ignore[arg-type]
    assert info.value.reason == "BAD_OPTION"
    assert name in str(info.value)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("players", 2),
        ("players", 6),
        ("target", 500),
        ("target", 1000),
        ("opening", 51),
        ("jokers_per_meld", 2),
        ("false_declaration", "reject"),
        ("stock_rebuilds", 0),
        ("simple_rami_sec", True),
        ("turn_seconds", 30),
    ],
)
def test_an_option_in_its_range_is_accepted(name: str, value: object) -> None:
    assert getattr(Options(**{name: value}), name) == value  # type: ignore[arg-type]


def test_an_option_the_variant_does_not_have_is_refused_unless_left_at_its_default() -> None:
    with pytest.raises(MalformedAction) as info:
        Options(target=500).check_variant("portuguese")
    assert info.value.reason == "BAD_OPTION"
    assert "target" in str(info.value) and "portuguese" in str(info.value)
    for variant, options in (
        ("tallage", Options(false_declaration="reject")),
        ("simple", Options(opening=51)),
        ("tallage", Options(simple_rami_sec=True)),
        ("portuguese", Options(round_cap=3)),
    ):
        with pytest.raises(MalformedAction):
            options.check_variant(variant)
    Options().check_variant("portuguese")  # every option at its default
    Options(target=500, round_cap=3, opening=51).check_variant("tallage")
    Options(rounds=3, false_declaration="reject").check_variant("portuguese")


def test_an_option_the_variant_lacks_is_said_so_before_its_value_is_checked() -> None:
    # ``target=100`` in portuguese was refused for its value ("one of 201, 500, 1000"), as if
    # another target would do: portuguese has none.
    with pytest.raises(MalformedAction, match="portuguese has no option target"):
        Options.for_variant("portuguese", {"target": 100})
    with pytest.raises(MalformedAction, match="tallage has no option rounds"):
        Options.for_variant("tallage", {"rounds": 0})
    with pytest.raises(MalformedAction, match="option target must be one of"):
        Options.for_variant("tallage", {"target": 100})
    with pytest.raises(MalformedAction, match="unknown option 'bogus'"):
        Options.for_variant("tallage", {"bogus": 1})
    assert Options.for_variant("portuguese", {"target": 201}) == Options()  # its default
    assert Options.for_variant("simple", {"players": 3}).players == 3


def test_options_from_a_dict_refuse_an_unknown_name_and_fill_in_defaults() -> None:
    with pytest.raises(MalformedAction) as info:
        Options.from_dict({"jokers": 3})
    assert info.value.reason == "BAD_OPTION"
    assert Options.from_dict({"players": 3}) == Options(players=3)
    assert Options.from_dict(Options(target=500).to_dict()) == Options(target=500)


def test_options_are_fixed_once_the_table_is_created_and_shown_to_every_client() -> None:
    options = Options(players=3, target=500, opening=51)
    game, _ = Game.new("tallage", options, seed=1)
    with pytest.raises(FrozenInstanceError):
        game.options.target = 1000  # type: ignore[misc]
    with pytest.raises(MalformedAction):
        options.with_(opening=60)
    for seat in (0, 1, 2, None):
        shown = view(game, seat).options
        assert shown.to_dict() == options.to_dict()
        with pytest.raises(FrozenInstanceError):
            shown.target = 1000  # type: ignore[misc]


def test_an_unknown_variant_and_a_wrong_stacked_deck_are_refused() -> None:
    with pytest.raises(MalformedAction) as info:
        Game.new("rummikub")
    assert info.value.reason == "BAD_VARIANT"
    with pytest.raises(MalformedAction) as info:
        Game.new("tallage", decks=[full_deck(2, 2)])
    assert info.value.reason == "BAD_DECK"


def test_a_game_replays_to_the_same_state_from_its_seed_and_actions() -> None:
    game, _ = Game.new("tallage", Options(players=3), seed="replay")
    for _ in range(9):
        seat = game.turn
        if game.phase == Phase.DRAW:
            play(game, seat, "draw stock")
        play(game, seat, Discard(game.hands[seat][0]))
    again = Game.replay("tallage", Options(players=3), "replay", game.log)
    assert again.state_key() == game.state_key()
    other, _ = Game.new("tallage", Options(players=3), seed="other")
    assert other.hands != Game.new("tallage", Options(players=3), seed="replay")[0].hands


def test_a_view_shows_only_the_watchers_own_hand() -> None:
    game = deal("tallage", ["Ah", "Kc", ""], "2d")
    v = view(game, 1)
    assert v.hand == tuple(game.hands[1])
    assert v.hand_sizes == (15, 14, 14)
    assert view(game, None).hand is None
    assert "hands" not in {f for f in dir(v) if not f.startswith("_")}


# -- cloning, and the learning environments' turn cap -----------------------------------------


def _played(variant: str, actions: int, seed: int = 3, **new: Any) -> Game:
    """A game after ``actions`` random plays (NextRound included)."""
    import random

    from rami.engine import POLICIES

    game, _ = Game.new(variant, Options(players=3), seed=seed, **new)
    rng = random.Random(seed)
    while game.number < actions and game.phase != Phase.GAME_OVER:
        if game.phase == Phase.ROUND_OVER:
            game.apply(None, NextRound())
        else:
            game.apply(game.turn, POLICIES["random"](view(game, game.turn), rng))
    return game


@pytest.mark.parametrize("variant", ["portuguese", "tallage", "simple"])
def test_a_clone_is_equal_and_independent(variant: str) -> None:
    game = _played(variant, 300)
    twin = game.clone()
    assert twin.state_key() == game.state_key() and twin.log == game.log
    before = (game.state_key(), list(game.log), [list(h) for h in game.hands])
    for _ in range(40):  # the twin plays on; the game must not see it
        if twin.phase == Phase.GAME_OVER:
            break
        if twin.phase == Phase.ROUND_OVER:
            twin.apply(None, NextRound())
        else:
            twin.apply(twin.turn, safe_move_of(twin))
    assert (game.state_key(), list(game.log), [list(h) for h in game.hands]) == before


def safe_move_of(game: Game) -> Any:
    from rami.engine.policies import safe_move

    return safe_move(view(game, game.turn))


def test_every_field_a_clone_shares_is_immutable() -> None:
    """``Game.clone`` copies the mutable containers and shares the rest: a field added later
    that holds something mutable must be copied there too."""
    import dataclasses

    game = _played("tallage", 200)
    twin = game.clone()
    for f in dataclasses.fields(Game):
        value = getattr(game, f.name)
        if isinstance(value, list | dict | set | bytearray):
            assert getattr(twin, f.name) is not value, f.name
            assert getattr(twin, f.name) == value, f.name
        else:
            assert isinstance(value, int | str | bytes | tuple | type(None)) or (
                dataclasses.is_dataclass(value) and type(value).__dataclass_params__.frozen  # type: ignore[attr-defined]
            ), f.name
    for hand, copied in zip(game.hands, twin.hands, strict=True):
        assert hand is not copied


def test_without_a_turn_cap_a_round_of_discard_taking_goes_on() -> None:
    game, _ = Game.new("portuguese", Options(players=2), seed=4)
    for _ in range(600):  # take the discard and throw it back: the stock never shrinks
        seat = game.turn
        top = game.discard[-1]
        game.apply(seat, Draw("discard"))
        game.apply(seat, Discard(top))
    assert game.phase == Phase.DRAW and game.round == 1


@pytest.mark.parametrize("variant", ["portuguese", "simple"])
def test_a_turn_cap_ends_the_round_void_after_that_many_turns(variant: str) -> None:
    game, _ = Game.new(variant, Options(players=2), seed=4, turn_cap=30)
    turns = 0
    while game.phase in (Phase.DRAW, Phase.PLAY):
        seat = game.turn
        top = game.hands[seat][0]  # the moroccan dealer's first turn: no draw
        if game.phase == Phase.DRAW:
            if "discard" in game.draw_sources(seat):
                top = game.discard[-1]
                game.apply(seat, Draw("discard"))
            else:
                top = game.stock[-1]
                game.apply(seat, Draw("stock"))
        events = game.apply(seat, Discard(top))
        turns += 1
    assert turns == 30 and game.turn_index == 30
    assert game.results[-1].ending == "void" and game.results[-1].points == (0, 0)
    assert any(isinstance(e, RoundEnded) for e in events)
    assert game.phase == Phase.ROUND_OVER
    game.apply(None, NextRound())
    assert game.round == 2 and game.turn_index == 0 and game.phase in (Phase.DRAW, Phase.PLAY)


def test_a_turn_cap_is_a_whole_number_and_replays() -> None:
    with pytest.raises(MalformedAction):
        Game.new("simple", turn_cap=-1)
    game = _played("simple", 400, turn_cap=25)
    assert game.results and all(r.ending == "void" for r in game.results)
    again = Game.replay("simple", game.options, game.seed, game.log, turn_cap=25)
    assert again.state_key() == game.state_key()
