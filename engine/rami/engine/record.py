"""Replaying a game record (docs/records.md): the deals checked, the game rebuilt move by move."""

from __future__ import annotations

import hashlib
from typing import Any

from .actions import NextRound
from .cards import Card, full_deck
from .errors import MalformedAction
from .game import Game, Phase
from .serial import action_from_dict
from .variants import Options, get_variant

__all__ = ["RecordError", "replay_record"]


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


def replay_record(doc: dict[str, Any]) -> Game:
    """The game of a complete record, after checking each seed against its published hash,
    each deal against its seed, every action against the rules, and every result."""
    variant = doc["variant"]
    options = Options.from_dict(doc["options"])
    rounds = doc["rounds"]
    seeds: list[bytes] = []
    decks: list[list[Card]] = []
    for r in rounds:
        if r.get("seed"):
            seed = bytes.fromhex(r["seed"])
            if hashlib.sha256(seed).hexdigest() != r["seed_hash"]:
                raise RecordError(f"round {r['round']}: the seed does not match its hash")
            seeds.append(seed)
        elif r.get("deal") is not None and len(decks) == len(seeds):
            decks.append(_deck_from_deal(variant, options.players, r["dealer"], r["deal"]))
            seeds.append(b"")
        else:
            raise RecordError(f"round {r['round']}: no seed and no deal to replay it from")
    game, _ = Game.new(variant, options, b"record", decks=decks, round_seeds=seeds)
    for r in rounds:
        if game.phase == Phase.ROUND_OVER:
            game.apply(None, NextRound())
        if r.get("deal") is not None:
            dealt = [[c.code() for c in h] for h in game.hands]
            if dealt != [list(h) for h in r["deal"]["hands"]]:
                raise RecordError(f"round {r['round']}: the seed does not deal these hands")
        for item in r["actions"]:
            try:
                game.apply(item["seat"], action_from_dict(item["action"]))
            except (MalformedAction, ValueError) as e:
                raise RecordError(f"update {item['number']}: {e}") from None
        if r.get("result") is not None:
            got = game.results[r["round"] - 1]
            if list(got.points) != r["result"]["points"] or got.ending != r["result"]["ending"]:
                raise RecordError(f"round {r['round']}: the result does not match the actions")
    return game
