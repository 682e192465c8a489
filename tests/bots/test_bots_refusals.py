"""The bot kit answers refusals alike on the Play stream and with unary Act: a move refused for
its content is answered once with a safe move, a rate-limited one is sent again a little later,
and either way the game goes on to its end."""

from __future__ import annotations

import asyncio
from pathlib import Path

import grpc
import pytest
from bots_support import Tables

from rami.client.botkit import BotResult, Decide, play
from rami.engine import Action, Discard, Draw, Phase, View
from rami.server.testing import ServerThread, deck_to_proto, stacked_deck
from rami.v1 import game_pb2

MODES = pytest.mark.parametrize("stream", [True, False], ids=["play-stream", "unary-act"])


def _discard_first(v: View) -> Action:
    """A discard even in the draw phase (refused there: MUST_DRAW), else the card drawn."""
    assert v.hand is not None
    return Discard(v.drawn if v.phase == Phase.PLAY and v.drawn is not None else v.hand[0])


def _safe(v: View) -> Action:
    assert v.hand is not None
    if v.phase == Phase.DRAW:
        return Draw("stock")
    return Discard(v.drawn if v.drawn is not None else v.hand[-1])


def _game(db: Path, decide: Decide, stream: bool, **limits: float) -> BotResult:
    """One remote bot kit against a built-in bot, two seats of a short simple game dealt junk (the
    greedy dealer can't lay its whole hand before the kit has played)."""
    deck = deck_to_proto(stacked_deck("simple", [None, None], "3c"))
    with ServerThread(str(db), **limits) as srv:
        with grpc.insecure_channel(srv.target) as ch:
            table_id = Tables(srv.target, ch).create(
                "simple", 2, bots=("greedy",), decks=(deck,), round_cap=1
            )
        return asyncio.run(asyncio.wait_for(play(srv.target, table_id, decide, stream=stream), 60))


@MODES
def test_a_refused_move_is_answered_once_with_a_safe_move(tmp_path: Path, stream: bool) -> None:
    result = _game(tmp_path / "refused.db", _discard_first, stream)
    assert result.final is not None and result.final.phase == game_pb2.PHASE_GAME_OVER
    assert result.refused and all("draw first" in r for r in result.refused)
    # Every refused discard was followed by the safe move (a draw), accepted, and each draw by
    # an accepted discard: two acknowledged commands per refusal, less a game that ended early.
    assert result.actions >= 2 * len(result.refused) - 1
    assert result.acknowledged == sorted(set(result.acknowledged))


@MODES
def test_a_rate_limited_command_is_sent_again_and_never_counted_refused(
    tmp_path: Path, stream: bool
) -> None:
    # One command at a time, 40 a second: the discard right after the draw waits its turn.
    result = _game(
        tmp_path / "limited.db", _safe, stream, commands_per_second=40.0, command_burst=1.0
    )
    assert result.final is not None and result.final.phase == game_pb2.PHASE_GAME_OVER
    assert result.rate_limited > 0
    assert not result.refused and result.reconnects == 0
    assert result.actions == len(result.acknowledged) > 0
