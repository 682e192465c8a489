"""Game records (docs/records.md): written from a game's moves, and replayed with every deal,
seed, action and result checked.

Once the game is over the record holds every round's deal, shuffle seed, actions and result.
While it runs, the record leaves out what is still concealed: the deal and the seed of the
round being played (its actions are public: a draw from the stock does not say the card).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .actions import Action, NextRound
from .cards import Card, full_deck
from .errors import MalformedAction
from .events import RoundResult
from .fair import FairDeal, FairnessError, check_server_seed, contribution, fair_round_seed
from .game import Game, Phase
from .serial import action_from_dict, action_to_dict
from .variants import Options, get_variant

__all__ = ["FORMAT", "Move", "RecordError", "RecordPlayer", "replay_record", "write_record"]

#: The layout of a record; a later, incompatible one gets a new number.
FORMAT = "rami-record/1"


@dataclass(frozen=True, slots=True)
class RecordPlayer:
    """A seat as its record shows it: its name, its kind (``player``, ``bot``) and policy."""

    name: str
    kind: str
    policy: str = ""


@dataclass(frozen=True, slots=True)
class Move:
    """One change of a game: a seat's action, or the next deal (``seat`` None, NextRound)."""

    #: The table's update number (shared with the watch stream).
    number: int
    seat: int | None
    action: Action
    #: Why the server played for the seat (``timeout``, ``away``), or None.
    auto: str | None = None


def _codes(cards: Iterable[Card]) -> list[str]:
    return [Card(c).code() for c in cards]


def _result(r: RoundResult) -> dict[str, Any]:
    return {
        "ending": r.ending,
        "winner": r.winner,
        "points": list(r.points),
        "totals": list(r.totals),
        "multiplier": r.multiplier,
        "hands": [_codes(h) for h in r.hands],
    }


def _round(game: Game) -> dict[str, Any]:
    """A round just dealt, its result and seed still to come."""
    return {
        "round": game.round,
        "dealer": game.dealer,
        "first_player": game.turn,
        "seed_hash": game.seed_hash(),
        "seed": None,
        "server_seed": None,
        "deal": {
            "hands": [_codes(h) for h in game.hands],
            "discard": Card(game.discard[-1]).code(),
            "stock": _codes(reversed(game.stock)),
        },
        "actions": [],
        "result": None,
    }


def _rounds(game: Game, moves: Iterable[Move]) -> list[dict[str, Any]]:
    rounds = [_round(game)]
    for move in moves:
        game.apply(move.seat, move.action)
        if move.seat is None:
            if game.phase in (Phase.DRAW, Phase.PLAY):
                rounds.append(_round(game))
            continue
        current = rounds[-1]
        item: dict[str, Any] = {
            "number": move.number,
            "seat": move.seat,
            "action": action_to_dict(move.action),
        }
        if move.auto is not None:
            item["auto"] = move.auto
        current["actions"].append(item)
        if len(game.results) >= game.round and current["result"] is None:
            r = game.results[game.round - 1]
            current["result"] = _result(r)
            current["seed"] = r.seed or None
            current["server_seed"] = r.server_seed or None
    for rnd in rounds:
        if rnd["result"] is None:  # the round being played: its deal is still concealed
            rnd["deal"] = None
    return rounds


def write_record(
    *,
    table_id: str,
    name: str,
    variant: str,
    options: Options,
    seed: bytes | None,
    decks: Sequence[Sequence[int]] = (),
    players: Sequence[RecordPlayer],
    moves: Iterable[Move],
    fair: FairDeal | None = None,
    turn_cap: int = 0,
) -> dict[str, Any]:
    """The record of a game (docs/records.md) from its table, its start (``seed`` None: not
    started yet, and no moves; ``fair``: the seeds of a fair deal, ``seed`` then unused), the
    turns its rounds may last (``turn_cap``, ``Game.new``'s; 0: no cap) and its moves in order,
    complete or in progress."""
    rounds: list[dict[str, Any]] = []
    game = None
    if seed is not None:
        game, _ = Game.new(variant, options, seed, decks=decks, fair=fair, turn_cap=turn_cap)
        rounds = _rounds(game, moves)
    complete = game is not None and game.phase == Phase.GAME_OVER
    return {
        "format": FORMAT,
        "table_id": table_id,
        "name": name,
        "variant": variant,
        "options": options.to_dict(),
        "turn_cap": turn_cap,
        "complete": complete,
        "players": [
            {"seat": i, "name": p.name, "kind": p.kind, "policy": p.policy}
            for i, p in enumerate(players)
        ],
        "deal": _deal(fair, started=game is not None, stacked=len(decks)),
        "rounds": rounds,
        "totals": list(game.totals) if game else [],
        "winners": list(game.winners) if game and complete else [],
    }


def _deal(fair: FairDeal | None, *, started: bool, stacked: int) -> dict[str, Any] | None:
    """A fair game's public parts: the server's commitment, the chain's length, every seat's
    entropy (known once the game has started), and how many first rounds were dealt from
    stacked decks (their deals were chosen, not shuffled)."""
    if fair is None:
        return None
    return {
        "commitment": fair.commitment,
        "rounds": fair.length,
        "entropies": [e.hex() for e in fair.entropies] if started else None,
        "stacked": stacked,
    }


class RecordError(ValueError):
    """A record whose deals, actions or results do not add up."""


def _deck_from_deal(variant: str, players: int, dealer: int, deal: dict[str, Any]) -> list[Card]:
    """A deck order that deals exactly ``deal`` (the hands are sorted, so any order of a hand's
    cards will do)."""
    v = get_variant(variant)
    hands = [[Card.parse(c) for c in h] for h in deal["hands"]]
    deck: list[Card] = []
    for k in range(v.hand_size):
        for i in range(1, players + 1):
            deck.append(hands[(dealer + i) % players][k])
    for k in range(v.dealer_extra):
        deck.append(hands[dealer][v.hand_size + k])
    deck.append(Card.parse(deal["discard"]))
    deck.extend(Card.parse(c) for c in deal["stock"])
    if sorted(deck) != sorted(full_deck(v.decks, v.jokers)):
        raise RecordError("a deal does not hold exactly the variant's deck")
    return deck


def _fair_check(
    deal: dict[str, Any] | None, players: list[dict[str, Any]]
) -> Callable[[int, dict[str, Any], bytes], None]:
    """What checks each round's seed of a record: nothing for a game not dealt fairly, else
    that the round's server seed hashes back to the commitment and, mixed with every seat's
    entropy, makes the round's seed (a bot's entropy is empty: the server chose none)."""
    if deal is None:
        return lambda n, r, seed: None
    commitment = str(deal["commitment"])
    length = int(deal["rounds"])
    entropies = list(deal["entropies"] or ())
    if entropies and len(entropies) != len(players):
        raise RecordError(
            f"the deal lists {len(entropies)} entropies for {len(players)} seats: one per seat"
        )
    for seat, (e, p) in enumerate(zip(entropies, players, strict=False)):
        if p.get("kind") == "bot" and e:
            raise RecordError(f"seat {seat} is a built-in bot: it sends no entropy")
    try:
        mixed = contribution([bytes.fromhex(e) for e in entropies])
    except FairnessError as e:
        raise RecordError(str(e)) from None

    def check(n: int, r: dict[str, Any], seed: bytes) -> None:
        if not r.get("server_seed"):
            raise RecordError(f"round {n}: a fair deal's round reveals no server seed")
        server_seed = bytes.fromhex(r["server_seed"])
        if n > length or not check_server_seed(commitment, server_seed, n):
            raise RecordError(f"round {n}: the server seed does not hash to the commitment")
        if fair_round_seed(server_seed, mixed, n) != seed:
            raise RecordError(
                f"round {n}: the seed is not the server seed mixed with the players' entropy"
            )

    return check


def replay_record(
    doc: dict[str, Any], *, commitment: str | None = None, stacked_deck: bool = False
) -> Game:
    """The game of a complete record, after checking each seed against its published hash
    (and, for a fair deal, against the server's commitment and the players' entropy), each
    deal against its seed, every action against the rules, and every result and total.
    ``commitment``: the ``TableInfo.deal_commitment`` a player noted before joining; the
    record must be a fair deal's, made with it, with stacked rounds only if ``stacked_deck``
    (``TableInfo.stacked_deck``) said so. A record that does not add up, or does not read,
    raises :class:`RecordError`."""
    try:
        return _replay(doc, commitment, stacked_deck)
    except RecordError:
        raise
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as e:
        raise RecordError(f"the record does not read ({type(e).__name__}: {e})") from None


def _replay(doc: dict[str, Any], commitment: str | None, stacked_deck: bool) -> Game:
    variant = doc["variant"]
    options = Options.from_dict(doc["options"])
    turn_cap = doc.get("turn_cap", 0)  # a record from before the cap: none
    if not isinstance(turn_cap, int) or isinstance(turn_cap, bool) or turn_cap < 0:
        raise RecordError(f"the turn cap is a whole number of turns, not {turn_cap!r}")
    rounds = doc["rounds"]
    deal = doc.get("deal")
    if commitment is not None and (deal is None or deal.get("commitment") != commitment):
        raise RecordError("the record is not dealt from the commitment the table showed")
    if deal is None and any(r.get("server_seed") for r in rounds):
        raise RecordError("a round reveals a server seed, but the record has no fair deal")
    check_seed = _fair_check(deal, list(doc["players"]))
    # A fair record says how many first rounds were stacked; any other round must be dealt
    # from a seed (a record from before fair deals has no such count: a deal without a seed
    # is a stacked round there).
    stacked = int(deal.get("stacked", 0)) if deal is not None else None
    if commitment is not None and stacked and not stacked_deck:
        raise RecordError("the record claims stacked rounds at a table that showed none")
    seeds: list[bytes] = []
    decks: list[list[Card]] = []
    for i, r in enumerate(rounds):
        n = i + 1
        if r["round"] != n:
            raise RecordError(f"round {n} of the record is labelled {r['round']!r}")
        # (A stacked round publishes no seed hash; it reveals its seed once over, for the
        # stock rebuilds it shuffles.)
        is_stacked = (i < stacked) if stacked is not None else not r.get("seed_hash")
        if is_stacked:
            if r.get("deal") is None or len(decks) != i:
                raise RecordError(f"round {n}: a stacked round shows its deal")
            decks.append(_deck_from_deal(variant, options.players, r["dealer"], r["deal"]))
            seed = bytes.fromhex(r["seed"]) if r.get("seed") else b""
            if seed:
                check_seed(n, r, seed)
            seeds.append(seed)
        elif r.get("seed"):
            seed = bytes.fromhex(r["seed"])
            if hashlib.sha256(seed).hexdigest() != r["seed_hash"]:
                raise RecordError(f"round {n}: the seed does not match its hash")
            check_seed(n, r, seed)
            seeds.append(seed)
        else:
            raise RecordError(f"round {n}: no seed to deal it from")
    game, _ = Game.new(
        variant, options, b"record", decks=decks, round_seeds=seeds, turn_cap=turn_cap
    )
    for i, r in enumerate(rounds):
        n = i + 1
        if game.phase == Phase.ROUND_OVER:
            game.apply(None, NextRound())
        if r.get("deal") is not None:
            dealt = [[c.code() for c in h] for h in game.hands]
            if dealt != [list(h) for h in r["deal"]["hands"]]:
                raise RecordError(f"round {n}: the seed does not deal these hands")
        for item in r["actions"]:
            try:
                game.apply(item["seat"], action_from_dict(item["action"]))
            except (MalformedAction, ValueError) as e:
                raise RecordError(f"update {item['number']}: {e}") from None
        over = len(game.results) >= n
        if over != (r.get("result") is not None):
            raise RecordError(f"round {n}: its result is {'missing' if over else 'not over'}")
        if over:
            got = game.results[n - 1]
            if list(got.points) != r["result"]["points"] or got.ending != r["result"]["ending"]:
                raise RecordError(f"round {n}: the result does not match the actions")
    complete = game.phase == Phase.GAME_OVER
    if bool(doc["complete"]) != complete:
        raise RecordError("the record's 'complete' does not match its game")
    if list(doc["totals"]) != list(game.totals):
        raise RecordError("the record's totals do not match its rounds")
    if complete and list(doc["winners"]) != list(game.winners):
        raise RecordError("the record's winners do not match its totals")
    return game
