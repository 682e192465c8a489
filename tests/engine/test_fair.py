"""Provably fair deals (``rami.engine.fair``, docs/records.md "Checking a deal"): the server's
hash chain, the players' entropy, and a record verifier that catches a server that chose a deal.
"""

from __future__ import annotations

import copy
import hashlib
import json
import random
from collections.abc import Sequence
from typing import Any

import pytest

from rami.engine import JOKER, POLICIES, Game, NextRound, Phase, view
from rami.engine.cards import full_deck
from rami.engine.fair import (
    FairDeal,
    FairnessError,
    chain_seed,
    check_server_seed,
    contribution,
    fair_round_seed,
)
from rami.engine.game import max_rounds
from rami.engine.record import Move, RecordError, RecordPlayer, replay_record, write_record
from rami.engine.variants import Options, get_variant

TIP = hashlib.sha256(b"the server's secret tip").digest()


def test_the_chain_hashes_back_to_its_commitment_round_by_round() -> None:
    fair = FairDeal(TIP, 5)
    assert chain_seed(TIP, 5, 5) == TIP
    h = TIP
    for _ in range(5):
        h = hashlib.sha256(h).digest()
    assert fair.commitment == h.hex()
    for r in range(1, 6):
        seed = fair.server_seed(r)
        assert check_server_seed(fair.commitment, seed, r)
        assert not check_server_seed(fair.commitment, seed, r + 1)
        # Each round's seed is the hash of the next: revealing it says nothing of the next.
        if r < 5:
            assert hashlib.sha256(fair.server_seed(r + 1)).digest() == seed
    with pytest.raises(FairnessError):
        fair.server_seed(6)
    with pytest.raises(FairnessError):
        fair.server_seed(0)


def test_every_seats_entropy_and_its_place_change_every_round() -> None:
    base = [b"a" * 32, b"", b"c" * 32]
    seeds = {fair_round_seed(FairDeal(TIP, 3).server_seed(1), contribution(base), 1)}
    for changed in (
        [b"A" * 32, b"", b"c" * 32],
        [b"a" * 32, b"x", b"c" * 32],
        [b"c" * 32, b"", b"a" * 32],  # the same entropies at other seats
        [b"a" * 32, b"c" * 32],
    ):
        seeds.add(fair_round_seed(FairDeal(TIP, 3).server_seed(1), contribution(changed), 1))
    assert len(seeds) == 5
    with pytest.raises(FairnessError):
        contribution([b"x" * 65])
    with pytest.raises(FairnessError):
        FairDeal(b"short", 3)


def test_a_fair_game_deals_from_the_chain_and_the_entropy() -> None:
    options = Options(players=2, rounds=3)
    fair = FairDeal(TIP, max_rounds(get_variant("portuguese"), options), (b"e" * 32, b""))
    game, _ = Game.new("portuguese", options, fair=fair)
    again, _ = Game.new("portuguese", options, fair=fair)
    assert game.hands == again.hands
    other, _ = Game.new("portuguese", options, fair=FairDeal(TIP, 3, (b"f" * 32, b"")))
    assert other.hands != game.hands
    assert game.seed_hash() == hashlib.sha256(fair.round_seed(1)).hexdigest()
    # The game seed is not used: a fair deal is the same whatever it is.
    third, _ = Game.new("portuguese", options, b"anything", fair=fair)
    assert third.hands == game.hands
    # A chain shorter than the game cannot deal it.
    with pytest.raises(ValueError, match="shorter"):
        Game.new("portuguese", options, fair=FairDeal(TIP, 2))


def _play(
    variant: str,
    options: Options,
    fair: FairDeal,
    seed: int,
    decks: Sequence[Sequence[int]] = (),
) -> dict[str, Any]:
    """A whole game by random bots (its first rounds dealt from ``decks``), and its record."""
    game, _ = Game.new(variant, options, fair=fair, decks=decks)
    rng = random.Random(seed)
    moves = []
    while game.phase != Phase.GAME_OVER:
        if game.phase == Phase.ROUND_OVER:
            game.apply(None, NextRound())
            moves.append(Move(len(moves) + 1, None, NextRound()))
            continue
        seat = game.turn
        action = POLICIES["random"](view(game, seat), rng)
        game.apply(seat, action)
        moves.append(Move(len(moves) + 1, seat, action))
    return write_record(
        table_id="t",
        name="t",
        variant=variant,
        options=options,
        seed=b"",
        players=[RecordPlayer(f"p{i}", "player") for i in range(options.players)],
        moves=moves,
        fair=fair,
        decks=decks,
    )


@pytest.mark.parametrize("variant", ["portuguese", "tallage", "simple"])
def test_a_fair_record_shows_what_checks_every_deal_and_replays(variant: str) -> None:
    options = Options(players=2, rounds=2, round_cap=2)
    entropies = (b"\x01" * 32, b"\x02" * 16)
    fair = FairDeal(TIP, max_rounds(get_variant(variant), options), entropies)
    doc = json.loads(json.dumps(_play(variant, options, fair, 1)))
    assert doc["deal"] == {
        "commitment": fair.commitment,
        "rounds": 2,
        "entropies": [e.hex() for e in entropies],
        "stacked": 0,
    }
    for r in doc["rounds"]:
        assert r["server_seed"] == fair.server_seed(r["round"]).hex()
        assert r["seed"] == fair.round_seed(r["round"]).hex()
    assert replay_record(doc).phase == Phase.GAME_OVER


def test_a_running_fair_record_reveals_no_seed_of_the_round_being_played() -> None:
    options = Options(players=2, rounds=2)
    fair = FairDeal(TIP, 2, (b"\x01" * 32, b""))
    doc = write_record(
        table_id="t",
        name="t",
        variant="portuguese",
        options=options,
        seed=b"",
        players=[RecordPlayer("a", "player"), RecordPlayer("b", "player")],
        moves=[],
        fair=fair,
    )
    text = json.dumps(doc)
    (r,) = doc["rounds"]
    assert r["seed"] is None and r["server_seed"] is None and r["deal"] is None
    for secret in (fair.server_seed(1), fair.server_seed(2), fair.round_seed(1), TIP):
        assert secret.hex() not in text
    assert doc["deal"]["commitment"] == fair.commitment


# -- the cheating server ------------------------------------------------------------------------


def _jokers(game: Game, seat: int) -> int:
    return sum(1 for c in game.hands[seat] if c == JOKER)


class CheatingServer:
    """A server that wants seat 0 to be dealt jokers. It committed to its chain when the table
    was made, as it must; once it has seen the players' entropy it tries shuffle seeds until the
    deal suits it, deals from that seed, and then writes the most convincing record it can."""

    def __init__(self, variant: str, options: Options, entropies: tuple[bytes, ...]) -> None:
        self.variant, self.options = variant, options
        self.fair = FairDeal(TIP, max_rounds(get_variant(variant), options), entropies)

    def chosen_seed(self) -> bytes:
        for i in range(10_000):
            seed = hashlib.sha256(b"grind" + i.to_bytes(4, "big")).digest()
            game, _ = Game.new(self.variant, self.options, seed)
            if _jokers(game, 0) >= 2:
                return seed
        raise AssertionError("no seed found")

    def record(self) -> dict[str, Any]:
        """The honest record, its first round replaced by the stacked one."""
        honest = _play(self.variant, self.options, self.fair, 2)
        seed = self.chosen_seed()
        game, _ = Game.new(self.variant, self.options, seed)
        rng = random.Random(3)
        actions = []
        while game.phase not in (Phase.ROUND_OVER, Phase.GAME_OVER):
            seat = game.turn
            action = POLICIES["random"](view(game, seat), rng)
            game.apply(seat, action)
            actions.append((seat, action))
        stacked = write_record(
            table_id="t",
            name="t",
            variant=self.variant,
            options=self.options,
            seed=seed,
            players=[RecordPlayer(f"p{i}", "player") for i in range(self.options.players)],
            moves=[Move(n, s, a) for n, (s, a) in enumerate(actions, 1)],
            fair=None,
        )
        doc = copy.deepcopy(honest)
        first = stacked["rounds"][0]
        assert first["seed"] and first["deal"]["hands"][0].count("JK") >= 2
        doc["rounds"] = [first]
        doc["options"] = {**doc["options"], "rounds": 1, "round_cap": 1}
        return doc


def test_the_cheating_server_is_caught_whatever_server_seed_it_shows() -> None:
    options = Options(players=2, rounds=2)
    cheat = CheatingServer("portuguese", options, (b"\x07" * 32, b"\x09" * 32))
    doc = cheat.record()
    first = doc["rounds"][0]
    # Its stacked round is consistent in itself (the seed deals those hands, its hash was
    # published): a verifier that trusted the seeds would replay it.
    legacy = {**copy.deepcopy(doc), "deal": None}
    legacy["rounds"][0]["server_seed"] = None
    replay_record(legacy)
    # It shows the server seed it committed to: that does not make this round's seed.
    first["server_seed"] = cheat.fair.server_seed(1).hex()
    with pytest.raises(RecordError, match="not the server seed mixed"):
        replay_record(doc)
    # It shows some other server seed: that does not hash back to its commitment.
    first["server_seed"] = hashlib.sha256(b"any").hexdigest()
    with pytest.raises(RecordError, match="does not hash to the commitment"):
        replay_record(doc)
    # It shows no server seed at all.
    first["server_seed"] = None
    with pytest.raises(RecordError, match="reveals no server seed"):
        replay_record(doc)


def test_a_record_that_leaves_out_or_changes_a_players_entropy_is_caught() -> None:
    options = Options(players=2, rounds=1)
    fair = FairDeal(TIP, 1, (b"\x01" * 32, b"\x02" * 32))
    doc = _play("portuguese", options, fair, 4)
    replay_record(doc)
    for entropies in ([fair.entropies[0].hex(), ""], [fair.entropies[1].hex()] * 2, []):
        forged = copy.deepcopy(doc)
        forged["deal"]["entropies"] = entropies
        with pytest.raises(RecordError, match="not the server seed mixed"):
            replay_record(forged)
    # Nor may it swap the commitment for one made afterwards (a player compares the record's
    # with the one TableInfo showed before joining; the verifier checks the chain against it).
    forged = copy.deepcopy(doc)
    forged["deal"]["commitment"] = hashlib.sha256(b"later").hexdigest()
    with pytest.raises(RecordError, match="does not hash to the commitment"):
        replay_record(forged)


# -- a record that does not add up is refused, whatever part of it was forged ------------------


def _honest(players: int = 2) -> tuple[FairDeal, dict[str, Any]]:
    options = Options(players=players, rounds=2)
    fair = FairDeal(TIP, 2, tuple(bytes([i + 1]) * 32 for i in range(players)))
    doc = json.loads(json.dumps(_play("portuguese", options, fair, 7)))
    replay_record(doc, commitment=fair.commitment)
    return fair, doc


def _refused(doc: dict[str, Any], match: str, **kw: Any) -> None:
    with pytest.raises(RecordError, match=match):
        replay_record(doc, **kw)


def test_a_fair_round_passed_off_as_stacked_is_refused() -> None:
    _, doc = _honest()
    forged = copy.deepcopy(doc)
    forged["rounds"][0]["seed"] = None
    forged["rounds"][0]["seed_hash"] = ""
    _refused(forged, "no seed")
    # Claimed stacked as well: the player who saw TableInfo.stacked_deck false says so.
    forged["deal"]["stacked"] = 1
    _refused(forged, "stacked rounds", commitment=doc["deal"]["commitment"])


def test_rounds_out_of_place_and_changed_results_are_refused() -> None:
    _, doc = _honest()
    swapped = copy.deepcopy(doc)
    swapped["rounds"] = swapped["rounds"][::-1]
    _refused(swapped, "labelled")
    dropped = copy.deepcopy(doc)
    dropped["rounds"][0]["result"] = None
    _refused(dropped, "result is missing")
    totals = copy.deepcopy(doc)
    totals["totals"] = [t + 1 for t in totals["totals"]]
    _refused(totals, "totals")
    winners = copy.deepcopy(doc)
    winners["winners"] = [s for s in range(2) if s not in doc["winners"]]
    _refused(winners, "winners")
    broken = copy.deepcopy(doc)
    broken["rounds"][0]["round"] = "x"
    _refused(broken, "labelled")
    del broken["rounds"][0]["actions"][0]["action"]
    broken["rounds"][0]["round"] = 1
    _refused(broken, "does not read")


def test_entropy_for_no_seat_or_for_a_bot_is_refused() -> None:
    _, doc = _honest()
    extra = copy.deepcopy(doc)
    extra["deal"]["entropies"].append(b"server-ground".hex())
    _refused(extra, "one per seat")
    bot = copy.deepcopy(doc)
    bot["players"][1]["kind"] = "bot"
    _refused(bot, "built-in bot")


def test_a_server_seed_without_a_deal_and_another_commitment_are_refused() -> None:
    fair, doc = _honest()
    bare = {**copy.deepcopy(doc), "deal": None}
    _refused(bare, "no fair deal")
    _refused(doc, "commitment the table showed", commitment="00" * 32)
    replay_record(doc, commitment=fair.commitment)


def test_a_stacked_round_of_a_fair_game_reveals_its_server_seed_for_its_rebuilds() -> None:
    """A stacked round is dealt from the deck given, but its stock's rebuilds are shuffled
    from its seed, which is made fairly as any round's: its server seed is revealed at its end
    so that the seed can be checked (the contract's comment said it was empty)."""
    options = Options(players=2, rounds=2)
    fair = FairDeal(TIP, 2, (b"\x01" * 32, b"\x02" * 32))
    doc = _play("portuguese", options, fair, 5, decks=[full_deck(2, 2)])
    first = doc["rounds"][0]
    assert first["server_seed"] == fair.server_seed(1).hex()
    assert first["seed"] == fair.round_seed(1).hex()
    assert doc["deal"]["stacked"] == 1
