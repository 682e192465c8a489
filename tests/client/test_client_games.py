"""End to end: the real client, typed into through a pipe, plays whole rounds on a real server.

Each game uses a stacked deck, so the person's cards (and the stock's top cards) are known:
the test types what a player would, waits for the sentences a player would read, and checks
the score table at the end. The bots hold junk, so they never open, finish or declare.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from client_harness import Driver
from client_server import ServerThread, Stubs, running_server, server_stubs

from rami.client import cli
from rami.client.convert import VARIANT_IDS
from rami.client.link import Link
from rami.client.look import Look
from rami.client.replay import load_frames
from rami.client.session import ClientSession
from rami.server.testing import long_game, stacked_deck
from rami.v1 import game_pb2, lobby_service_pb2


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerThread]:
    """A real server on 127.0.0.1 for this test."""
    yield from running_server(tmp_path)


@pytest.fixture
def stubs(server: ServerThread) -> Iterator[Stubs]:
    """Blocking stubs on it."""
    yield from server_stubs(server)


TALLAGE_HAND = "Qs Ks As 8c 8d 8h 7h 8h 9h 4c JK 6c Jh 2d 5s"
TALLAGE_DISCARD_HAND = "Qs Ks As 8c 8d 8h 7h 8h 9h 10h 3s 4s 5s 6d 2d"
SIMPLE_HAND = "Ks Kd Kh 4c 5c 6c 9h JK Jh 2c 2d 2s 8d Qd"
PORTUGUESE_HAND = "3d 4d 5d 7c 8c 9c 10c Ks Kd Kh 9h JK Jh"


def _table(stubs: Stubs, variant: str, hand: str, stock: str, **options: int) -> str:
    deck = stacked_deck(variant, [hand, None], "3s", stock)
    response = stubs.lobby.CreateTable(
        lobby_service_pb2.CreateTableRequest(
            name=f"{variant} e2e",
            variant=VARIANT_IDS[variant],
            options=game_pb2.Options(players=2, **options),
            stacked_decks=[lobby_service_pb2.Deck(cards=[c + 1 for c in deck])],
        )
    )
    return response.table.table_id


def _client(server: ServerThread) -> Driver:
    look = Look(color=True, ascii=False)
    return Driver(lambda: cli._connect(server.target, "Ana", look, None)).start()


def _sit_with_a_bot(d: Driver, variant: str) -> None:
    d.expect(r"Connected to 127\.0\.0\.1")
    d.expect(rf"1  [a-z2-7]{{6,16}}  waiting\s+{variant} e2e: {variant}, 0/2 seated")
    d.type("join 1")
    d.expect(r"You sit at seat 0")
    d.type("bot greedy")
    d.expect(r"Greedy bot 2 \(a bot\) sat down at seat 1\.")
    d.expect(r"The game begins: Ana and Greedy bot 2\.")


def test_a_round_of_tallage_opening_adding_and_taking_a_joker_back(
    server: ServerThread, stubs: Stubs, tmp_path: Path
) -> None:
    _table(stubs, "tallage", TALLAGE_HAND, "10c 5c", round_cap=1)
    d = _client(server)
    try:
        _sit_with_a_bot(d, "tallage")
        d.expect(r"Round 1: You deal and play first; 3♠ is turned up\.")
        d.expect(r"It's your turn: you play first with 15 cards, without drawing\.")
        d.type("discard 3c")
        d.expect(r"You don't hold 3♣\. Nothing was played\.")
        d.type("lay qs ks as, 8C 8D 8H, 7♥ 8♥ 9♥, 4c JK 6c")
        d.expect(
            r"You laid \[1\] Q♠ K♠ A♠, \[2\] 8♣ 8♦ 8♥, \[3\] 7♥ 8♥ 9♥ and "
            r"\[4\] 4♣ JK\(5♣\) 6♣ and opened with 78; the bar is now 78\."
        )
        d.type("discard 2d")
        d.expect(r"You discarded 2♦\.")
        d.expect(r"Greedy bot 2 drew from the stock\.")
        d.expect(r"Greedy bot 2 discarded ")
        # No lay could take the bot's discard (A♦): only the stock is offered.
        d.expect(r"It's your turn: take a card with draw stock\.")
        d.type("lay ad 2d 3d")  # the pile's top, which the rules do not offer: not held
        d.expect(r"You don't hold A♦, 2♦, 3♦\. Nothing was played\.")
        d.type("discard 5s")
        d.expect(r"Draw first: you discard after taking a card \(draw stock\)\. Nothing was sent\.")
        d.type("draw stock")
        d.expect(r"You drew 5♣ from the stock\.")
        d.type("take 4 5c")
        d.expect(r"Now say where the joker goes")
        d.type("add 3 jk")
        d.expect(
            r"You took back the joker from \[4\] with 5♣ and added JK to \[3\] "
            r"\(now 7♥ 8♥ 9♥ JK\(10♥\)\)\."
        )
        d.type("add 3 jh")
        d.expect(
            r"You added J♥ to \[3\] \(now 7♥ 8♥ 9♥ JK\(10♥\) J♥\), leaving one card to "
            r"discard\."
        )
        d.type("discard 5s")
        d.expect(r"Round 1: You went out \(Rami\)\.")
        d.expect(r"player\s+paid\s+total\s+left in hand")
        d.expect(r"You\s+0\s+0\s+\(went out\)")
        d.expect(r"Greedy bot 2\s+(\d+)\s+\1\s+[A2-9JQK10]")
        d.expect(r"Game over after 1 round: You win with 0\.")
        record = tmp_path / "game.json"
        d.type(f"save {record}")
        d.expect(r"Saved the whole game to ")
    finally:
        d.close()
    doc = json.loads(record.read_text())
    assert doc["complete"] and doc["players"][0]["name"] == "Ana"
    replay = load_frames(record)
    assert len(replay.frames) == 1 + sum(len(r["actions"]) for r in doc["rounds"])


def test_tallage_takes_the_discard_with_the_lay_typed_after_it(
    server: ServerThread, stubs: Stubs
) -> None:
    # The greedy bot draws J♥ and sheds it (its costliest loose card); Ana takes it.
    _table(stubs, "tallage", TALLAGE_DISCARD_HAND, "Jh", round_cap=1)
    d = _client(server)
    try:
        _sit_with_a_bot(d, "tallage")
        d.expect(r"It's your turn: you play first with 15 cards")
        d.type("lay Qs Ks As, 8c 8d 8h, 7h 8h 9h")
        d.expect(r"and opened with 78; the bar is now 78\.")
        d.type("discard 2d")
        d.expect(r"Greedy bot 2 discarded J♥\.")
        d.expect(r"It's your turn: take a card with draw stock, or draw discard to take J♥\.")
        d.type("draw discard")
        d.expect(r"You take J♥ when you lay it: now type the lay that uses it")
        d.type("discard 6d")
        d.expect(r"First finish draw discard \(J♥\) with a lay, or cancel it\.")
        d.type("add 3 10h jh")
        d.expect(r"You took J♥ from the discard pile\.")
        d.expect(r"You added 10♥ J♥ to \[3\] \(now 7♥ 8♥ 9♥ 10♥ J♥\)\.")
        d.type("lay 3s 4s 5s")
        d.expect(r"You laid \[4\] 3♠ 4♠ 5♠, leaving one card to discard\.")
        d.type("discard 6d")
        d.expect(r"Round 1: You went out \(Rami\)\.")
    finally:
        d.close()


def test_a_round_of_simple_with_a_hint_then_a_finish(server: ServerThread, stubs: Stubs) -> None:
    _table(stubs, "simple", SIMPLE_HAND, "10c 7c", round_cap=1)
    d = _client(server)
    try:
        _sit_with_a_bot(d, "simple")
        d.expect(r"It's your turn: you play first with 14 cards")
        d.type("discard 8d")
        d.expect(r"You discarded 8♦\.")
        d.expect(r"It's your turn: take a card")
        d.type("hint")  # before the draw: a finish needs the card drawn to fit too
        d.expect(
            r"All your cards but one fit in melds \(keeping Q♦\): you finish if the card you"
            r" draw fits them too\."
        )
        d.type("draw")
        d.expect(r"You drew 7♣ from the stock\.")
        d.type("help lay")
        d.expect(r"lay CARDS")
        start = d.cursor
        d.type("help hint")
        d.expect(r"> help hint")
        assert " add " not in d.screen.text()[start : d.cursor]  # simple has no add
        d.type("hint")
        d.expect(r"Best arrangement: .*nothing left over|left over: Q♦")
        d.expect(
            r"You can lay everything but one card, keeping Q♦\. The arrangement above only"
            r" counts points; the plays below are lays the rules accept\."
        )
        d.type("lay Ks Kd Kh, 4c 5c 6c 7c, 9h JK Jh, 2c 2d 2s")
        d.expect(r"You laid \[1\] K♦ K♥ K♠, .* and \[4\] 2♣ 2♦ 2♠, leaving one card to discard\.")
        d.type("table")
        d.expect(r"You\s+seat 0 · 1 card · 0 points")
        d.type("discard qd")
        d.expect(r"Round 1: You went out \(Rami\)\.")
        d.expect(r"Game over after 1 round: You win with 0\.")
    finally:
        d.close()


def test_a_round_of_portuguese_ends_with_a_declaration(server: ServerThread, stubs: Stubs) -> None:
    _table(stubs, "portuguese", PORTUGUESE_HAND, "2s 2s", rounds=1)
    d = _client(server)
    try:
        _sit_with_a_bot(d, "portuguese")
        d.expect(r"Round 1: You deal; Greedy bot 2 plays first; 3♠ is turned up\.")
        d.expect(r"Greedy bot 2 discarded ")
        d.expect(r"It's your turn: take a card")
        d.type("draw stock")
        d.expect(r"You drew 2♠ from the stock\.")
        d.type("draw stock")
        d.expect(r"You can't draw now: you have already drawn this turn\. Nothing was staged")
        d.type("say good game, all")
        d.expect(r"You: good game, all")
        d.type("lay 7c 7s 7h")  # the rule, not which of these cards are held
        d.expect(
            r"Nothing is laid in portuguese: hands stay closed; declare to finish\. Nothing was"
            r" sent\."
        )
        d.type("hint")
        d.expect(r"You can declare, putting face down: 2♠\.")
        d.type("declare 2S")
        d.expect(r"You declared a complete hand:")
        d.expect(r"Round 1: You declared a complete hand\.")
        d.expect(r"Game over after 1 round: You win with 0\.")
    finally:
        d.close()


def _server_away_on_the_players_turn(d: Driver, server: ServerThread) -> None:
    """At a portuguese table with a bot, on the player's turn, the server stops."""
    _sit_with_a_bot(d, "portuguese")
    d.expect(r"It's your turn: take a card")
    server.halt()
    d.expect(r"The connection to the server dropped; reconnecting\.\.\.", timeout=10)


def _draw_typed_while_the_server_is_away(d: Driver, server: ServerThread) -> None:
    """The server away on the player's turn, the player types draw stock, and is told it
    waits for the server."""
    _server_away_on_the_players_turn(d, server)
    d.type("draw stock")
    d.expect(
        r"The connection is down: draw stock waits for it, up to 10 s; it is sent if the"
        r" connection is back by then\."
    )


def test_the_stream_resumes_by_itself_after_the_server_restarts(
    server: ServerThread, stubs: Stubs
) -> None:
    _table(stubs, "portuguese", PORTUGUESE_HAND, "2s 2s", rounds=1)
    d = _client(server)
    try:
        _draw_typed_while_the_server_is_away(d, server)
        server.start()
        d.expect(r"Reconnected: the table is up to date\.", timeout=15)
        d.expect(r"You drew 2♠ from the stock\.", timeout=15)
        d.type("declare 2s")
        d.expect(r"Game over after 1 round: You win with 0\.")
    finally:
        d.close()


def test_a_move_typed_during_a_long_outage_is_said_to_have_no_answer(
    server: ServerThread, stubs: Stubs
) -> None:
    # A move typed while the server is away waits for it a while (10 s); when the connection
    # never came back, the move was never sent, and the player is told so.
    _table(stubs, "portuguese", PORTUGUESE_HAND, "2s 2s", rounds=1)
    d = _client(server)
    try:
        _draw_typed_while_the_server_is_away(d, server)
        said = (
            r"Draw stock was not sent: the connection did not come back within 10 s\. Type it "
            r"again once it is back\."
        )
        d.expect(said.replace(" ", r"\s+"), timeout=20)  # (the window breaks the line)
        server.start()
        d.expect(r"Reconnected: the table is up to date\.", timeout=15)
        d.type("draw stock")
        d.expect(r"You drew 2♠ from the stock\.", timeout=15)
    finally:
        d.close()


def test_a_hint_asked_while_the_connection_is_down_is_refused_at_once(
    server: ServerThread, stubs: Stubs
) -> None:
    # A hint is the server's analysis of the hand as it is now: while the connection is down
    # it is refused at once, rather than holding the prompt while it waits for no answer.
    _table(stubs, "portuguese", PORTUGUESE_HAND, "2s 2s", rounds=1)
    d = _client(server)
    try:
        _server_away_on_the_players_turn(d, server)
        d.type("hint")
        d.expect(
            r"The connection is down: hint asks the server, so ask again once it is back\.",
            timeout=3,
        )
        server.start()
        d.expect(r"Reconnected: the table is up to date\.", timeout=15)
        d.type("hint")
        d.expect(r"Best arrangement: ")
    finally:
        d.close()


def test_after_a_restart_the_clock_shown_is_the_one_the_new_server_runs(
    server: ServerThread, stubs: Stubs
) -> None:
    # A restarted server gives the player to move a fresh turn clock: the client must show
    # that one, not count the old one down to 0:00 and sit there until the server plays.
    table_id = _table(stubs, "portuguese", PORTUGUESE_HAND, "2s 2s", rounds=1, turn_seconds=60)
    sessions: list[ClientSession] = []

    async def main() -> None:
        link = Link(server.target)
        try:
            session = ClientSession(link, name="Ana", look=Look(color=True, ascii=False))
            sessions.append(session)
            await session.run([f"Connected to {server.target}."])
        finally:
            await link.close()

    def held() -> int:
        view = sessions[0].view
        assert view is not None and view.HasField("turn_deadline")
        return int(view.turn_deadline.ToNanoseconds())

    def running() -> int:
        assert server.server is not None
        deadline = server.server.lobby.tables[table_id].deadline
        assert deadline is not None
        return int(deadline * 1e9)

    d = Driver(main).start()
    try:
        d.expect(r"Connected to 127\.0\.0\.1")
        d.type(f"join {table_id}")
        d.expect(r"You sit at seat 0")
        d.type("bot greedy")
        d.expect(r"Greedy bot 2 discarded ")
        d.expect(r"It's your turn: take a card")
        before = held()
        assert before == running()
        time.sleep(1.1)  # the new server's clock starts a second later, at least
        server.halt()
        d.expect(r"The connection to the server dropped; reconnecting\.\.\.", timeout=10)
        server.start()
        d.expect(r"Reconnected: the table is up to date\.", timeout=15)
        fresh = running()
        assert fresh >= before + 1_000_000_000
        end = time.monotonic() + 5
        while held() != fresh and time.monotonic() < end:
            time.sleep(0.02)
        assert held() == fresh, (held(), fresh, before)
        d.type("draw stock")  # the table goes on from there
        d.expect(r"You drew 2♠ from the stock\.")
    finally:
        d.close()


def test_a_spectator_watches_bots_and_goes_back_to_the_lobby(
    server: ServerThread, stubs: Stubs
) -> None:
    table_id = _table(stubs, "portuguese", PORTUGUESE_HAND, "2s 2s", rounds=1)
    d = _client(server)
    try:
        d.expect(r"Connected to")
        d.type(f"watch {table_id}")
        d.expect(r"Watching portuguese e2e")
        d.type("draw stock")
        d.expect(r"You are watching: spectators can't play\.")
        d.type("leave")
        d.expect(r"You are back in the lobby\.")
        d.type("lay 7h 8h 9h")
        d.expect(r"You are not at a table")
        d.type("dicsard 9c")
        d.expect(r"There is no command 'dicsard'\. Did you mean discard\?")
        d.type("join nosuchtable")
        d.expect(r"No table 'nosuchtable'\.")
    finally:
        d.close()


def test_refusals_name_the_player_and_help_fits_the_window(
    server: ServerThread, stubs: Stubs
) -> None:
    table_id = _table(stubs, "portuguese", PORTUGUESE_HAND, "2s 2s", rounds=1)
    d = Driver(
        lambda: cli._connect(server.target, "Ana", Look(color=True, ascii=False), None),
        columns=60,
    ).start()
    try:
        d.expect(r"Connected to 127\.0\.0\.1")
        d.type("tables")
        d.expect(r"portuguese e2e")
        d.type("join 1")
        d.expect(r"You sit at seat 0")
        d.type("say hello")  # runs once the client follows the table
        d.expect(r"You: hello")
        stubs.lobby.JoinTable(lobby_service_pb2.JoinTableRequest(table_id=table_id, name="Bob"))
        d.expect(r"The game begins: Ana and Bob\.")
        d.expect(r"Round 1: You deal; Bob plays first")
        d.type("draw stock")
        d.expect(r"Refused: It is Bob's turn, not yours\. Nothing was played\.")
        d.type("help")
        start = d.cursor
        d.expect(r"help COMMAND\s+explains\s+one\.")
        shown = d.screen.text()[start : d.cursor].split("\n")
        # Every line of the help fits 60 columns: lines break between words, not in them.
        assert all(len(line) < 60 for line in shown), [x for x in shown if len(x) >= 60]
        assert any("sort your hand by suit" in line for line in shown)
        d.type("help create")
        start = d.cursor
        d.expect(r"See\s+docs/rules\.md\s+for\s+every\s+option\.")
        shown = d.screen.text()[start : d.cursor].split("\n")
        assert all(len(line) < 60 for line in shown), [x for x in shown if len(x) >= 60]
    finally:
        d.close()


def test_a_spectators_help_has_no_hand_to_sort(server: ServerThread, stubs: Stubs) -> None:
    table_id = _table(stubs, "portuguese", PORTUGUESE_HAND, "2s 2s", rounds=1)
    d = _client(server)
    try:
        d.expect(r"Connected to")
        d.type(f"watch {table_id}")
        d.expect(r"Watching portuguese e2e")
        d.type("help")
        start = d.cursor
        d.expect(r"help COMMAND\s+explains\s+one\.")
        shown = d.screen.text()[start : d.cursor]
        assert "leave this table" in shown
        assert "sort" not in shown, shown
    finally:
        d.close()


def test_a_tallage_hint_says_how_far_the_opening_is_short(
    server: ServerThread, stubs: Stubs
) -> None:
    _table(stubs, "tallage", "2c 2d 2h 3s 4s 5s 7c 9d Jh Kc 8d 10h Qs 6h Ad", "10c 5c")
    d = _client(server)
    try:
        _sit_with_a_bot(d, "tallage")
        d.expect(r"It's your turn: you play first with 15 cards")
        d.type("hint")
        d.expect(r"Your best opening is worth 18: short of 71 by 53 points\.")
    finally:
        d.close()


def test_a_portuguese_hint_says_a_set_needs_a_clean_run(server: ServerThread, stubs: Stubs) -> None:
    _table(stubs, "portuguese", "Ks Kd Kh 2c 5d 9h Jc 4s 7d 10s Qh 3c 8h", "2s 2s", rounds=1)
    d = _client(server)
    try:
        _sit_with_a_bot(d, "portuguese")
        d.type("hint")
        d.expect(r"Best arrangement: no melds")
        d.expect(r"Your set K♦ K♥ K♠ counts only beside a clean run \(three in a row of one suit")
        # Drawn, the hand holds 14 cards: its points left over count the one to be thrown.
        d.type("draw stock")
        d.expect(r"You drew 2♠ from the stock\.")
        d.type("hint")
        d.expect(r"The points left over count the card you are about to throw\.")
    finally:
        d.close()


def test_after_a_declaration_the_score_table_shows_the_cards_paid_for(
    server: ServerThread, stubs: Stubs
) -> None:
    # The bot holds a run and a set: after Ana declares it pays only for the rest.
    deck = stacked_deck(
        "portuguese",
        [PORTUGUESE_HAND, "4h 5h 6h Qc Qd Qs 2h 7s 9d Jd 3c 6c Ac"],
        "3s",
        "2s 2s",
    )
    stubs.lobby.CreateTable(
        lobby_service_pb2.CreateTableRequest(
            name="portuguese e2e",
            variant=VARIANT_IDS["portuguese"],
            options=game_pb2.Options(players=2, rounds=1),
            stacked_decks=[lobby_service_pb2.Deck(cards=[c + 1 for c in deck])],
        )
    )
    d = _client(server)
    try:
        _sit_with_a_bot(d, "portuguese")
        d.expect(r"It's your turn: take a card")
        d.type("draw stock")
        d.expect(r"You drew 2♠ from the stock\.")
        d.type("declare 2s")
        d.expect(r"Round 1: You declared a complete hand\.")
        d.expect(r"player\s+paid\s+total\s+(paid for|left in hand)")
        row = d.expect(r"Greedy bot 2\s+(\d+)\s+\1\s+(.*)")
        paid = row.group(2).split()
        assert 0 < len(paid) < 13, paid
        assert not {"4♥", "5♥", "6♥"} & set(paid), paid  # the run was not paid for
    finally:
        d.close()


def test_pile_tells_the_discards_and_who_threw_them(server: ServerThread, stubs: Stubs) -> None:
    _table(stubs, "portuguese", PORTUGUESE_HAND, "2s 2s", rounds=1)
    d = _client(server)
    try:
        _sit_with_a_bot(d, "portuguese")
        thrown = d.expect(r"Greedy bot 2 discarded (\S+)\.").group(1)
        d.expect(r"It's your turn: take a card")
        d.expect(rf"Pile\s+{re.escape(thrown)} Greedy bot 2 · 3♠")  # the panel's line
        d.type("pile")
        d.expect(r"The discard pile \(2 cards\), the newest first")
        d.expect(rf"{re.escape(thrown)}\s+discarded by Greedy bot 2\n")
        d.expect(r"3♠\s+turned up\n")
        d.type("draw discard")
        d.expect(rf"You took {re.escape(thrown)} from the discard pile\.")
        d.type("pile")
        d.expect(rf"{re.escape(thrown)}\s+discarded by Greedy bot 2, taken by You")
    finally:
        d.close()


def test_a_join_that_starts_the_game_knows_the_card_turned_up(
    server: ServerThread, stubs: Stubs
) -> None:
    # The join that fills the table starts its game, which may be dealt before the client's
    # stream opens: the pile still says the card on it was turned up, not "on top when you
    # joined" (the client was there for the deal).
    table_id = _table(stubs, "portuguese", PORTUGUESE_HAND, "2s 2s", rounds=1)
    stubs.lobby.JoinTable(lobby_service_pb2.JoinTableRequest(table_id=table_id, name="Bea"))
    d = _client(server)
    try:
        d.expect(r"1  [a-z2-7]{6,16}  waiting")
        d.type("join 1")
        d.expect(r"You sit at seat 1")
        d.expect(r"3♠ is turned up")
        d.type("pile")
        d.expect(r"The discard pile \(1 card\), the newest first")
        d.expect(r"3♠\s+turned up\n")
    finally:
        d.close()


def test_scores_is_a_sheet_of_every_round_and_table_marks_the_dealer(
    server: ServerThread, stubs: Stubs
) -> None:
    _table(stubs, "portuguese", PORTUGUESE_HAND, "2s 2s", rounds=1)
    d = _client(server)
    try:
        _sit_with_a_bot(d, "portuguese")
        d.expect(r"It's your turn: take a card")
        d.type("scores")
        d.expect(r"No round has finished yet\.")
        d.type("table")
        d.expect(r"You\s+seat 0 · 13 cards · 0 points · dealer")
        d.type("draw stock")
        d.type("declare 2s")
        paid = d.expect(r"Greedy bot 2\s+(\d+)\s+\1\s").group(1)
        d.expect(r"Game over after 1 round")
        d.type("scores")
        d.expect(r"Scores after 1 round")
        d.expect(r"round\s+You\s+Greedy bot 2")
        d.expect(rf"\n\s+1\s+0\s+{paid}\s+You declared")
        d.expect(rf"total\s+0\s+{paid}\n")
    finally:
        d.close()


def test_a_long_pile_shows_the_newest_throws_that_fit_the_window(
    server: ServerThread, stubs: Stubs
) -> None:
    _table(stubs, "portuguese", PORTUGUESE_HAND, "2s 2s", rounds=1)
    look = Look(color=True, ascii=False)
    d = Driver(lambda: cli._connect(server.target, "Ana", look, None), columns=80, rows=24)
    d.start()
    try:
        _sit_with_a_bot(d, "portuguese")
        for _ in range(9):  # eighteen throws: more than 24 rows hold under the panel
            d.expect(r"It's your turn: take a card")
            d.type("draw stock")
            drawn = d.expect(r"You drew (\S+) from the stock\.").group(1)
            d.type(f"discard {drawn}")
            d.expect(rf"You discarded {re.escape(drawn)}\.")
        d.expect(r"It's your turn: take a card")
        d.type("pile")
        # The command as echoed above the prompt (not the prompt's own line, "your turn> pile",
        # which a screen taken before the command ran still shows).
        start = d.expect(r"\n[ \x08]*> pile\n").end()
        d.expect(r"The discard pile \(\d+ cards(, and \d+ taken from it)?\), the newest first\n")
        older = d.expect(r"… and (\d+) older throws \(no room in this window\)\n")
        shown = d.screen.text()[start : older.start()].split("\n")[1:-1]
        assert 10 <= len(shown) <= 14, shown
        assert len(shown) + int(older.group(1)) == 20, shown  # turned up, and 19 discards
        assert "discarded by Greedy bot 2" in shown[0], shown  # the newest first
    finally:
        d.close()


def test_the_player_is_warned_before_the_turn_clock_runs_out(
    server: ServerThread, stubs: Stubs
) -> None:
    """Ten seconds before the server plays for a player whose clock runs out, the player is
    told in words (a countdown in the toolbar is easy to miss); once, and not after moving."""
    _table(stubs, "portuguese", PORTUGUESE_HAND, "2s 2s", rounds=1, turn_seconds=13)
    d = _client(server)
    try:
        _sit_with_a_bot(d, "portuguese")
        d.expect(r"It's your turn: take a card")
        d.expect(r"10 seconds left in your turn: then the server plays for you\.", timeout=8)
        d.type("draw stock")
        d.expect(r"You drew 2♠ from the stock\.")
        time.sleep(1.0)
        assert len(re.findall(r"10 seconds left in your turn", d.screen.text())) == 1
    finally:
        d.close()


def test_no_clock_warning_is_given_while_the_server_is_out_of_reach(
    server: ServerThread, stubs: Stubs
) -> None:
    """With the server down there is nobody to play for the player when the clock runs out
    (and a server back gives the turn a new clock): "10 seconds left" was said all the same."""
    _table(stubs, "portuguese", PORTUGUESE_HAND, "2s 2s", rounds=1, turn_seconds=13)
    d = _client(server)
    try:
        _server_away_on_the_players_turn(d, server)
        time.sleep(5.0)  # the warning was due 3 s into the turn
        assert "seconds left in your turn" not in d.screen.text()
        server.start()
        d.expect(r"Reconnected: the table is up to date\.", timeout=15)
        # The new server's clock, a new turn's: its warning is due, and given.
        d.expect(r"10 seconds left in your turn: then the server plays for you\.", timeout=8)
    finally:
        d.close()


def test_a_turn_that_ran_out_is_told_as_the_servers_moves(
    server: ServerThread, stubs: Stubs
) -> None:
    """The moves the server makes for a player whose clock ran out are the server's, told as
    the moves made while a player was away are ("The server (for you) drew ..."): a new
    player's try read "You drew" and "You discarded" for moves they had not made."""
    _table(stubs, "portuguese", PORTUGUESE_HAND, "2s 2s", rounds=1, turn_seconds=1)
    d = _client(server)
    try:
        _sit_with_a_bot(d, "portuguese")
        d.expect(r"You ran out of time; the server played for you\.", timeout=15)
        d.expect(r"The server \(for you\) drew 2♠ from the stock\.")
        d.expect(r"The server \(for you\) discarded ")
        told = d.screen.text()[d.cursor - 400 : d.cursor]
        assert "You drew" not in told and "You discarded" not in told, told
    finally:
        d.close()


def test_a_table_made_for_a_seat_the_server_refuses_is_closed_again(
    server: ServerThread, stubs: Stubs
) -> None:
    # The server refuses a name with a pile of accents, which the client lets through: create
    # made the table, then the join was refused, and the table stayed, waiting, nobody seated.
    piled = "Zo" + "\u0308" * 5
    look = Look(color=False, ascii=True)
    d = Driver(lambda: cli._connect(server.target, piled, look, None)).start()
    try:
        d.expect("Connected")
        d.type("create simple players=2 name=Friday")
        d.expect(r"accents on one character")
        d.expect(r"The table made for it is closed again")
        d.type("tables")
        d.expect(r"No open tables")  # the closed one is counted, not listed
    finally:
        d.close()
    listed = stubs.lobby.ListTables(lobby_service_pb2.ListTablesRequest())
    closed = lobby_service_pb2.TABLE_STATUS_CLOSED
    assert [t.status for t in listed.tables] in ([], [closed]), listed


def test_a_move_typed_as_the_clock_ran_out_is_told_too_late_not_sent(
    server: ServerThread, stubs: Stubs
) -> None:
    """A move typed just as the clock ran out was answered "You don't hold 2♥" (the server
    had discarded it for the player), or would have been sent into the next turn: it is
    refused as too late, and nothing is sent."""
    table_id = _table(stubs, "portuguese", PORTUGUESE_HAND, "2s 2s", rounds=1, turn_seconds=2)
    d = _client(server)
    try:
        d.expect(r"1  [a-z2-7]{6,16}  waiting")
        d.type("join 1")
        d.expect(r"You sit at seat 0")
        # A second player who does not move: after Ana's clock, the turn is theirs a while.
        stubs.lobby.JoinTable(lobby_service_pb2.JoinTableRequest(table_id=table_id, name="Bea"))
        d.expect(r"You ran out of time; the server played for you\.", timeout=15)
        d.expect(r"The server \(for you\) discarded ")
        d.type("draw stock")
        d.expect(r"Too late: your clock ran out and the server played that turn for you")
        d.expect(r"draw stock was not sent")
    finally:
        d.close()


def test_a_move_typed_on_the_next_turn_after_a_timeout_is_sent(
    server: ServerThread, stubs: Stubs
) -> None:
    """The moments after a clock ran out are refused as too late, but not once the player's
    next turn has begun (the bot played at once): that move is the new turn's."""
    _table(stubs, "portuguese", PORTUGUESE_HAND, "2s 2s", rounds=1, turn_seconds=2)
    d = _client(server)
    try:
        _sit_with_a_bot(d, "portuguese")
        d.expect(r"You ran out of time; the server played for you\.", timeout=15)
        d.expect(r"It's your turn: take a card")
        d.type("draw stock")
        d.expect(r"You drew \S+ from the stock\.")
        assert "Too late" not in d.screen.text()
    finally:
        d.close()


def test_a_table_stream_silent_past_its_bound_is_opened_again(
    server: ServerThread, stubs: Stubs
) -> None:
    """A server that stops answering with its connection still open (frozen, cut off) sends
    no heartbeat: the client's stream of the table is taken for dead after its bound (45 s;
    1 s here, the test server's heartbeat being 0.5 s), said as a lost connection, and opened
    again; the table is followed on once the server answers."""
    import asyncio

    table_id = _table(stubs, "portuguese", PORTUGUESE_HAND, "2s 2s", rounds=1)
    said: list[str] = []

    async def go() -> None:
        link = Link(server.target, silence=1.0)
        seen: list[int] = []

        async def follow() -> None:
            async for update in link.updates(table_id, None, said.append):
                seen.append(update.number)

        reading = asyncio.ensure_future(follow())
        try:
            end = time.monotonic() + 10
            while not seen and time.monotonic() < end:
                await asyncio.sleep(0.05)
            assert seen, "no update came"
            server.loop.call_soon_threadsafe(time.sleep, 3.0)  # the server freezes
            end = time.monotonic() + 15
            while "reconnected" not in said and time.monotonic() < end:
                await asyncio.sleep(0.1)
        finally:
            reading.cancel()
            await link.close()

    started = time.monotonic()
    asyncio.run(go())
    assert said == ["lost", "reconnected"], said
    assert time.monotonic() - started < 15


def test_a_seats_stream_open_refused_rate_limited_is_no_lost_connection(tmp_path: Path) -> None:
    """Each open of a seat's stream counts as one of its commands: an open refused
    RATE_LIMITED (the seat's burst spent) is waited out for its retry_after_ms, not told to
    the player as a lost connection and tried every 0.2 s."""
    import asyncio

    from rami.server.testing import ServerThread as Server
    from rami.server.testing import Stubs as Blocking

    with (
        Server(str(tmp_path / "rami.db"), commands_per_second=1.0, command_burst=1.0) as srv,
        Blocking(srv.target) as stubs,
    ):
        table_id = _table(stubs, "portuguese", PORTUGUESE_HAND, "2s 2s", rounds=1)
        joined = stubs.lobby.JoinTable(
            lobby_service_pb2.JoinTableRequest(table_id=table_id, name="Ana"), timeout=10
        )
        said: list[str] = []

        async def go() -> float:
            link = Link(srv.target)
            spent = link.updates(table_id, joined.token, said.append)
            await anext(spent)  # the burst's one token: this open
            started = time.monotonic()
            async for _ in link.updates(table_id, joined.token, said.append):
                break  # the next open, once a token has come
            took = time.monotonic() - started
            await spent.aclose()
            await link.close()
            return took

        took = asyncio.run(go())
    assert "lost" not in said, said
    assert took >= 0.5, took


def _at_the_kept_table_with_greedy(server: ServerThread, table_id: str) -> Driver:
    """Ana's client, seated at ``table_id`` with a greedy bot, on her first turn."""
    d = Driver(
        lambda: cli._connect(server.target, "Ana", Look(color=True, ascii=False), None)
    ).start()
    try:
        d.expect(r"Connected to 127\.0\.0\.1")
        d.type(f"join {table_id}")
        d.expect(r"You sit at seat 0")
        d.type("bot greedy")
        d.expect(r"It's your turn: take a card")
    except BaseException:
        d.close()
        raise
    return d


def _back_up(server: ServerThread) -> Path:
    """A copy of the server's database as it is now."""
    import sqlite3

    backup = Path(server.db).with_name("backup.db")
    with sqlite3.connect(server.db) as live, sqlite3.connect(backup) as copy:
        live.backup(copy)
    return backup


def _restart_from(server: ServerThread, backup: Path) -> None:
    """The server stopped, its database replaced by ``backup``, and started again."""
    server.halt()
    for suffix in ("", "-wal", "-shm"):
        Path(server.db + suffix).unlink(missing_ok=True)
    backup.rename(server.db)
    server.start()


@pytest.mark.parametrize("behind", ["one update", "a few updates"])
def test_a_table_restored_from_an_older_backup_is_followed_from_where_it_is(
    server: ServerThread, stubs: Stubs, behind: str
) -> None:
    """The server comes back from a backup older than what the player saw: said, and the
    table is followed from where it is now (the player's turn again), not from the newer
    view the client held, with which every move was refused ("update N has not happened").
    One update behind, the resumed stream is not refused at all: its heartbeat says so."""
    table_id = _table(stubs, "portuguese", PORTUGUESE_HAND, "2s 2s", rounds=1)
    d = _at_the_kept_table_with_greedy(server, table_id)
    try:
        backup = _back_up(server)  # the table at the player's draw
        if behind == "one update":
            d.type("draw stock")
            d.expect(r"You drew 2♠ from the stock\.")
        else:
            d.type("draw stock")
            d.expect(r"You drew 2♠ from the stock\.")
            d.type("discard 2s")
            d.expect(r"You discarded 2♠\.")
            d.expect(r"Greedy bot 2 discarded")
        _restart_from(server, backup)
        d.expect(r"The table is behind what you saw", timeout=20)
        d.expect(r"It's your turn: take a card", timeout=10)
        d.type("draw stock")
        d.expect(r"You drew 2♠ from the stock\.")
    finally:
        d.close()


def test_a_finished_game_restored_from_an_older_backup_does_not_end_twice(
    server: ServerThread, stubs: Stubs
) -> None:
    """A table restored from a backup taken after its game ended, but before what the player
    saw last (a chat line): the client follows it from a snapshot, which shows the game over.
    How it ended was told live, and is not told again (a game that ended before it was
    followed is told from its snapshot)."""
    table_id = _table(stubs, "portuguese", PORTUGUESE_HAND, "2s 2s", rounds=1)
    d = _at_the_kept_table_with_greedy(server, table_id)
    try:
        d.type("draw stock")
        d.expect(r"You drew 2♠ from the stock\.")
        d.type("declare 2s")
        d.expect(r"Game over after 1 round: You win with 0\.")
        backup = _back_up(server)  # the table at its game's end
        d.type("say well played")
        d.expect(r"You: well played")
        _restart_from(server, backup)
        d.expect(r"The table is behind what you saw", timeout=20)
        d.expect(r"Portuguese Rami · round 1 of 1")  # the table followed again: its snapshot
        d.type("scores")
        d.expect(r"Scores after 1 round")
        shown = d.screen.text()
        assert shown.count("Game over after 1 round") == 1, shown
    finally:
        d.close()


def test_the_record_of_a_long_game_is_received_whole(server: ServerThread, stubs: Stubs) -> None:
    # A game whose rounds run to the turn cap (discards thrown back: 1,000 updates a round)
    # has a record past gRPC's default 4 MB a message: the client takes it all the same.
    import asyncio

    from rami.v1 import table_service_pb2

    created = stubs.lobby.CreateTable(
        lobby_service_pb2.CreateTableRequest(
            variant=game_pb2.VARIANT_SIMPLE, options=game_pb2.Options(players=2, round_cap=40)
        )
    )
    table_id = created.table.table_id
    for name in ("Ana", "Bo"):
        stubs.lobby.JoinTable(lobby_service_pb2.JoinTableRequest(table_id=table_id, name=name))
    assert server.server is not None
    # Some 8 s on an idle machine, the loop's CPU all the while: over 30 s on a loaded one.
    server.call(long_game(server.server.lobby.tables[table_id], 1_000_000), timeout=300)

    async def main() -> tuple[int, bool]:
        link = Link(server.target)
        try:
            request = table_service_pb2.ExportRecordRequest(table_id=table_id)
            response = await link.call(link.table.ExportRecord, request)
        finally:
            await link.close()
        return len(response.record_json.encode()), response.complete

    size, complete = asyncio.run(main())
    assert complete and size > 4 << 20
