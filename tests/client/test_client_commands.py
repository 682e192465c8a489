"""End to end, the commands around the moves: tables named by a stable id, what save says of a
running game, moves refused before they are staged, confirmations (an incomplete declaration,
quit during a game), undo of a staged step, and a rematch after the game is over.

Each test types into the real client on a real server, with a stacked deck
(rami.server.testing.stacked_deck).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from client_harness import Driver
from client_server import ServerThread, Stubs, running_server, server_stubs

from rami.client import cli
from rami.client.convert import VARIANT_IDS
from rami.client.look import Look
from rami.server.testing import stacked_deck
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
#: Thirteen cards to lay at once (the opening), 2♦ to discard, J♥ left alone in the hand.
TALLAGE_ONE_LEFT = "Qs Ks As 8c 8d 8h 7h 8h 9h 10h 4c JK 6c Jh 2d"
PORTUGUESE_HAND = "3d 4d 5d 7c 8c 9c 10c Ks Kd Kh 9h JK Jh"


def _created(
    stubs: Stubs,
    variant: str,
    hands: list[str | None],
    stock: str,
    name: str = "",
    **options: int,
) -> lobby_service_pb2.CreateTableResponse:
    """A two-player table dealt ``hands`` (None: any cards), 3♠ turned up, ``stock`` on top."""
    deck = stacked_deck(variant, hands, "3s", stock)
    return stubs.lobby.CreateTable(
        lobby_service_pb2.CreateTableRequest(
            name=name or f"{variant} e2e",
            variant=VARIANT_IDS[variant],
            options=game_pb2.Options(players=2, **options),
            stacked_decks=[lobby_service_pb2.Deck(cards=[c + 1 for c in deck])],
        )
    )


def _table(
    stubs: Stubs, variant: str, hand: str, stock: str, name: str = "", **options: int
) -> str:
    return _created(stubs, variant, [hand, None], stock, name, **options).table.table_id


def _client(server: ServerThread, name: str = "Ana") -> Driver:
    look = Look(color=True, ascii=False)
    return Driver(lambda: cli._connect(server.target, name, look, None)).start()


def _sit_with_a_bot(d: Driver, variant: str) -> None:
    d.expect(r"Connected to 127\.0\.0\.1")
    d.expect(rf"1  [a-z2-7]{{6,16}}  waiting\s+{variant} e2e: {variant}, 0/2 seated")
    d.type("join 1")
    d.expect(r"You sit at seat 0")
    d.type("bot greedy")
    d.expect(r"Greedy bot 2 \(a bot\) sat down at seat 1\.")
    d.expect(r"The game begins: Ana and Greedy bot 2\.")


# -- item 4: tables by a stable id --------------------------------------------------------------


def test_join_by_number_refuses_when_the_list_moved_and_a_short_id_joins(
    server: ServerThread, stubs: Stubs
) -> None:
    first = _table(stubs, "portuguese", PORTUGUESE_HAND, "2s", name="First")
    d = _client(server)
    try:
        d.expect(r"Connected to")
        d.expect(rf"1  {first[:6]}\S*  waiting\s+First: ")
        _table(stubs, "portuguese", PORTUGUESE_HAND, "2s", name="Second")  # listed first now
        d.type("join 1")
        d.expect(r"The tables have changed since the list you saw: number 1 is now Second")
        d.expect(r"1  \S+  waiting\s+Second: ")
        d.expect(r"2  \S+  waiting\s+First: ")
        d.type(f"join {first[:6]}")
        d.expect(r"You sit at seat 0: First: portuguese")
        d.type("leave")
        d.expect(r"You are back in the lobby")
        d.type("watch 2")  # the list just printed: 2 is First
        d.expect(r"Watching First: portuguese")
        d.type("leave")
        d.expect(r"You are back in the lobby")
        d.keys("watch \t")  # Tab offers the short ids, in the list's order
        d.expect(rf"\b[a-z2-7]{{6}} {first[:6]}\b")  # Second's, then First's
        d.keys("\x15")  # Ctrl-U: the line is dropped
        d.type("help join")
        d.expect(r"join \[TABLE\]")
    finally:
        d.close()


# -- item 5: save tells the truth about a running game ------------------------------------------


def test_save_mid_game_says_replay_needs_the_finished_game(
    server: ServerThread, stubs: Stubs, tmp_path: Path
) -> None:
    _table(stubs, "portuguese", PORTUGUESE_HAND, "2s 2s", rounds=1)
    d = _client(server)
    try:
        _sit_with_a_bot(d, "portuguese")
        d.expect(r"It's your turn: take a card")
        d.type(f"save {tmp_path / 'running.json'}")
        d.expect(  # broken between words to the window
            r"Saved the game so far \(still running\) to \S*running\.json\.\s+rami-client\s+"
            r"replay\s+steps\s+only\s+through\s+a\s+finished\s+game:\s+save\s+again\s+once\s+"
            r"it\s+is\s+over\."
        )
    finally:
        d.close()


def test_save_takes_a_quoted_name_and_tells_the_replay_as_a_shell_takes_it(
    server: ServerThread, stubs: Stubs, tmp_path: Path
) -> None:
    # The quotes were taken as part of the name ("No such file or directory"), and the replay
    # command told for a name with a space broke when pasted into a shell.
    _table(stubs, "portuguese", PORTUGUESE_HAND, "2s 2s", rounds=1)
    d = _client(server)
    try:
        _sit_with_a_bot(d, "portuguese")
        d.expect(r"It's your turn: take a card")
        spaced = tmp_path / "with space.json"
        d.type(f'save "{spaced}"')
        d.expect(r"Saved the game so far")
        assert json.loads(spaced.read_text())
        d.type(f"save {spaced}")  # unquoted, as before: the rest of the line
        d.expect(
            r"Saved\s+the\s+game\s+so\s+far\s+\(still\s+running\)\s+to\s+'[^']*with\s+"
            r"space\.json'\s+\(it\s+replaces\s+the\s+file\s+that\s+was\s+there\)"
        )
        d.type('save "unclosed.json')
        d.expect(r"A quote is left open in \"unclosed\.json: save \"my game\.json\"")
        assert not (tmp_path / "unclosed.json").exists()
    finally:
        d.close()


def test_an_escape_sequence_typed_or_pasted_is_not_taken_for_a_broken_mouse_event(
    server: ServerThread,
) -> None:
    # Esc [ 3 1 m (a colour's code, typed, or pasted by a terminal without bracketed paste)
    # reads as a mouse report of the urxvt kind, and prompt_toolkit's mouse handler raised on
    # it: "Unhandled exception in event loop", "Press ENTER to continue...", and the next
    # line swallowed.
    d = _client(server)
    try:
        d.expect(r"Connected to 127\.0\.0\.1")
        d.keys("say \x1b[31mRED\r")
        d.type("help join")
        d.expect(r"join \[TABLE\]")
        assert "Unhandled exception" not in d.screen.text()
        assert "Press ENTER" not in d.screen.text()
    finally:
        d.close()


# -- item 7: moves that can never work are refused before they are staged ----------------------


def test_a_joker_take_is_refused_at_once_before_opening_and_without_the_card(
    server: ServerThread, stubs: Stubs
) -> None:
    _table(stubs, "tallage", TALLAGE_HAND, "10c 5c", round_cap=1)
    d = _client(server)
    try:
        _sit_with_a_bot(d, "tallage")
        d.expect(r"It's your turn: you play first with 15 cards, without drawing\.")
        d.type("take 1 7h")
        d.expect(r"You have not opened yet: you take a joker back only once you have opened")
        d.type("lay qs ks as, 8C 8D 8H, 7♥ 8♥ 9♥, 4c JK 6c")
        d.expect(r"and opened with 78")
        d.type("discard 2d")
        d.expect(r"It's your turn: take a card with draw stock")
        d.type("draw stock")
        d.expect(r"You drew 5♣ from the stock\.")
        d.type("take 4 7h")
        d.expect(r"You don't hold 7♥\. Nothing was staged or sent\.")
        d.type("lay 5c 5c 5c")  # 5♣ named three times, held once
        d.expect(r"You hold 5♣ only once\. Nothing was")
        d.type("take 9 5c")
        d.expect(r"There is no meld 9 on the table\. Nothing was staged or sent\.")
        d.type("take 1 5c")
        d.expect(r"Meld 1 has no joker that 5♣ can replace\. Nothing was staged or sent\.")
        d.type("take 1 kc")  # not held either: the meld is said first, the misread one
        d.expect(r"Meld 1 has no joker that K♣ can replace\. Nothing was staged or sent\.")
        d.type("take 4 5c")
        d.expect(r"Now say where the joker goes")
        d.type("lay 9s 10s")  # still waiting for the joker, and not held
        d.expect(r"You don't hold 9♠, 10♠\. Nothing was staged\.")
        d.type("cancel")
        d.expect(r"Dropped take 4 5c\.")
        d.type("discard 5s")  # nothing staged: it goes through
        d.expect(r"You discarded 5♠\.")
    finally:
        d.close()


def test_draw_discard_with_one_card_in_hand_is_refused_at_once(
    server: ServerThread, stubs: Stubs
) -> None:
    _table(stubs, "tallage", TALLAGE_ONE_LEFT, "10c 5c", round_cap=1)
    d = _client(server)
    try:
        _sit_with_a_bot(d, "tallage")
        d.expect(r"It's your turn: you play first with 15 cards, without drawing\.")
        d.type("lay qs ks as, 8c 8d 8h, 7h 8h 9h 10h, 4c JK 6c")
        d.expect(r"and opened with")
        d.type("discard 2d")
        d.expect(r"You discarded 2♦\.")
        d.expect(r"Greedy bot 2 discarded ")
        d.expect(r"It's your turn: take a card with draw stock")
        d.type("draw discard")
        d.expect(r"You can't take the discard now: holding one card, you draw from the stock\.")
        d.type("cancel")
        d.expect(r"Nothing is staged\.")
        d.type("draw stock")
        d.expect(r"You drew 5♣ from the stock\.")
    finally:
        d.close()


def test_a_draw_or_a_lay_that_the_turn_allows_no_more_is_refused_at_once(
    server: ServerThread, stubs: Stubs
) -> None:
    """The dealer's first turn has no draw, and a player who opened this turn lays again only
    from the next: the client says so at once, instead of staging a move (a draw of the
    discard, a joker take) that waits for a lay and is then refused whole."""
    _table(stubs, "tallage", TALLAGE_HAND, "10c 5c", round_cap=1)
    d = _client(server)
    try:
        _sit_with_a_bot(d, "tallage")
        d.expect(r"It's your turn: you play first with 15 cards, without drawing\.")
        d.type("draw discard")
        d.expect(
            r"You can't draw now: the dealer plays the first turn without drawing: lay or "
            r"discard\. Nothing was staged or sent\."
        )
        d.type("cancel")
        d.expect(r"Nothing is staged\.")
        d.type("lay qs ks as, 8C 8D 8H, 7♥ 8♥ 9♥, 4c JK 6c")
        d.expect(r"and opened with 78")
        for line in ("take 4 5s", "add 1 Js", "lay Jh 2d 5s"):
            d.type(line)
            d.expect(
                r"You opened this turn: you lay again from your next turn\. Nothing was staged "
                r"or sent\."
            )
        d.type("cancel")
        d.expect(r"Nothing is staged\.")
        d.type("discard 2d")
        d.expect(r"You discarded 2♦\.")
        d.expect(r"Greedy bot 2 discarded ")
        d.expect(r"It's your turn: take a card with draw stock")
        d.type("draw stock")
        d.expect(r"You drew 5♣ from the stock\.")
        d.type("take 4 5c")
        d.expect(r"Now say where the joker goes")
        d.type("lay JK Jh 5s")  # no meld: the server refuses the move whole
        d.expect(r"Refused: ")
        d.expect(r"Still staged: take 4 5c \(type its lay again, or cancel drops it\)\.")
    finally:
        d.close()


def test_a_draw_of_the_discard_a_take_or_a_lay_out_of_turn_is_refused_at_once(
    server: ServerThread, stubs: Stubs
) -> None:
    """On another player's turn, ``draw discard`` (tallage: staged until its lay is typed)
    was staged, with one's own discard, then dropped without a word when the pile changed.
    It is refused at once, as a discard out of turn is."""
    table_id = _table(stubs, "tallage", TALLAGE_HAND, "10c 5c", round_cap=1)
    d = _client(server)
    try:
        d.expect(r"Connected to 127\.0\.0\.1")
        d.expect(r"1  [a-z2-7]{6,16}  waiting\s+tallage e2e: tallage, 0/2 seated")
        d.type("join 1")
        d.expect(r"You sit at seat 0")
        stubs.lobby.JoinTable(lobby_service_pb2.JoinTableRequest(table_id=table_id, name="Bo"))
        d.expect(r"It's your turn: you play first with 15 cards, without drawing\.")
        d.type("discard 2d")
        d.expect(r"You discarded 2♦\.")
        d.type("draw discard")  # Bo's turn, and Bo is thinking
        d.expect(r"It is Bo's turn, not yours\. Nothing was staged or sent\.")
        d.type("cancel")
        d.expect(r"Nothing is staged\.")
        # A take (staged until its joker's place is typed) and a lay, the same: found by a
        # new player's try, the take was staged, and its lay refused by the server later.
        d.type("take 1 4c")
        d.expect(r"It is Bo's turn, not yours\. Nothing was staged or sent\.")
        d.type("lay 3c 4c 5c")
        d.expect(r"It is Bo's turn, not yours\. Nothing was staged or sent\.")
        d.type("cancel")
        d.expect(r"Nothing is staged\.")
    finally:
        d.close()


# -- item 8: an incomplete declaration asks first -----------------------------------------------


def test_an_incomplete_declaration_asks_before_showing_the_hand(
    server: ServerThread, stubs: Stubs
) -> None:
    _table(stubs, "portuguese", PORTUGUESE_HAND, "2s 2s", rounds=1)
    d = _client(server)
    try:
        _sit_with_a_bot(d, "portuguese")
        d.expect(r"It's your turn: take a card")
        # Before the draw, the card about to be drawn: draw first, not "you don't hold".
        d.type("declare 2s")
        d.expect(r"Draw first: you declare after taking a card \(draw stock, or draw discard\)")
        d.type("draw stock")
        d.expect(r"You drew 2♠ from the stock\.")
        # A card not held is said so at once, before any question.
        d.type("declare 8d")
        d.expect(r"You don't hold 8♦.*Nothing was played\.")
        d.type("declare 3d")
        d.expect(r"With 3♦ face down your hand is not complete: declaring shows your 13 cards")
        d.expect(
            r"declare 2♠ would\s+be\s+complete\.\s+Type\s+y\s+\(or\s+yes\)\s+to\s+declare\s+anyway"
        )
        d.type("no")
        d.expect(r"Not declared\.")
        d.type("declare 2s")
        d.expect(r"You declared a complete hand:")
        d.expect(r"Game over after 1 round: You win with 0\.")
        # Once the game is over, its moves are not listed nor taken: what is, is said.
        d.type("discard 3d")
        d.expect(r"The game is over: rematch starts a new one, scores shows the last")
        d.type("help")
        d.expect(r"Commands at this table, its game over")
    finally:
        d.close()


# -- item 15: undo a staged step, and quit asks during a game -----------------------------------


def test_undo_drops_the_last_staged_step_and_quit_asks_during_a_game(
    server: ServerThread, stubs: Stubs
) -> None:
    _table(stubs, "tallage", TALLAGE_HAND, "10c 5c", round_cap=1)
    d = _client(server)
    try:
        _sit_with_a_bot(d, "tallage")
        d.expect(r"It's your turn: you play first with 15 cards, without drawing\.")
        d.type("lay qs ks as, 8C 8D 8H, 7♥ 8♥ 9♥, 4c JK 6c")
        d.expect(r"and opened with 78")
        d.type("discard 2d")
        d.expect(r"It's your turn: take a card with draw stock")
        d.type("draw stock")
        d.expect(r"You drew 5♣ from the stock\.")
        d.type("undo")
        d.expect(r"Nothing is staged to undo: undo takes back a command staged and not yet sent")
        d.type("take 4 5c")
        d.expect(r"Now say where the joker goes")
        d.type("take 4 5c")  # typed again: it is staged, not a card short
        d.expect(r"take 4 5c is staged already: now say where the joker goes")
        # A command refused while something is staged stages nothing, and leaves nothing to
        # undo: one undo drops the take.
        d.type("discard 5s")
        d.expect(r"First finish take 4 5c with a lay, or cancel it\.")
        d.type("undo")
        d.expect(r"Undid take 4 5c; nothing is staged now\.")
        d.type("discard 5s")  # nothing staged is left to finish first
        d.expect(r"You discarded 5♠\.")
        d.type("quit")
        d.expect(r"The game is still on: if you quit, the server plays your seat")
        d.expect(r"Type y \(or yes\) to quit")
        d.type("no")
        d.expect(r"You stay at the table\.")
        d.type("table")
        d.expect(r"Tallage")
    finally:
        d.close()


def test_a_command_for_elsewhere_says_where_it_belongs(server: ServerThread, stubs: Stubs) -> None:
    _table(stubs, "tallage", TALLAGE_HAND, "10c 5c", round_cap=1)
    d = _client(server)
    try:
        d.expect(r"Connected to 127\.0\.0\.1")
        d.type("discard 2d")
        d.expect(r"You are not at a table: tables lists them")
        d.type("join 1")
        d.expect(r"You sit at seat 0")
        d.type("create simple")  # at a waiting table
        d.expect(r"create is for the lobby: leave this table first\.")
        d.type("discard 2d")
        d.expect(r"The game has not started yet: bot seats a bot, start starts it\.")
        d.type("bot greedy")
        d.expect(r"The game begins: Ana and Greedy bot 2\.")
        d.type("start")  # the game is on
        d.expect(r"The game is on already: that was for before it\.")
        d.type("tables")
        d.expect(r"tables is for the lobby: leave this table first\.")
    finally:
        d.close()


def test_a_name_too_long_is_said_to_be_shortened(server: ServerThread, stubs: Stubs) -> None:
    d = _client(server)
    try:
        d.expect(r"Connected to 127\.0\.0\.1")
        d.type("name Bob the Great Destroyer of Worlds")
        d.expect(
            r"Names are at most 24 characters: you will join tables as Bob the Great Destroyer\."
        )
        d.type("name Eva")
        d.expect(r"\n *You will join tables as Eva\.")
    finally:
        d.close()


def test_ctrl_d_during_a_game_asks_as_quit_does_and_a_second_one_quits(
    server: ServerThread, stubs: Stubs
) -> None:
    _table(stubs, "tallage", TALLAGE_HAND, "10c 5c", round_cap=1)
    d = _client(server)
    try:
        _sit_with_a_bot(d, "tallage")
        d.expect(r"It's your turn: you play first with 15 cards, without drawing\.")
        d.keys("\x04")  # Ctrl-D
        d.expect(r"The game is still on: if you quit, the server plays your seat")
        d.expect(r"quit\? \[y/N\]> ")
        d.type("")  # Enter alone: the N the prompt shows
        d.expect(r"You stay at the table\.")
        d.keys("\x04")
        d.expect(r"quit\? \[y/N\]> ")
        d.type("no")
        d.expect(r"You stay at the table\.")
        d.type("table")
        d.expect(r"Tallage")
        d.keys("\x04")
        # Said, as a new player's try found it was not: "anything else keeps you" was read
        # as Ctrl-D too.
        d.expect(r"The game is still on[\s\S]*Type y \(or yes\) to quit \(Ctrl-D\s+quits too\)")
        d.keys("\x04")  # again: quits
        d.expect(r"You left the game: the server plays your seat")
        d.thread.join(10)
        assert not d.thread.is_alive(), "a second Ctrl-D did not quit"
    finally:
        d.close()


def test_leave_during_a_game_says_the_server_plays_the_seat(
    server: ServerThread, stubs: Stubs
) -> None:
    _table(stubs, "tallage", TALLAGE_HAND, "10c 5c", round_cap=1)
    d = _client(server)
    try:
        _sit_with_a_bot(d, "tallage")
        d.expect(r"It's your turn: you play first with 15 cards, without drawing\.")
        # Asked first, as quit is: anything but yes keeps the seat.
        d.type("leave")
        d.expect(r"The game is still on: if you leave, the server plays your seat from now on\.")
        # What the stand-in does, said before it is chosen: a new player expected it to lay.
        d.expect(r"It only draws and discards for you: it lays nothing\.")
        d.type("n")
        d.expect(r"You stay at the table\.")
        d.type("leave")
        d.expect(r"leave\? \[y/N\]>")
        d.type("y")
        d.expect(r"You left the game: the server plays your seat from now on\.")
        d.expect(r"You are back in the lobby\.")
    finally:
        d.close()


# -- item 16: a rematch after the game is over --------------------------------------------------


def test_rematch_creates_a_table_like_the_last_and_seats_its_bots(
    server: ServerThread, stubs: Stubs
) -> None:
    _table(stubs, "portuguese", PORTUGUESE_HAND, "2s 2s", rounds=1)
    d = _client(server)
    try:
        _sit_with_a_bot(d, "portuguese")
        d.expect(r"It's your turn: take a card")
        d.type("rematch")
        d.expect(r"A rematch is for when the game is over")
        d.type("draw stock")
        d.expect(r"You drew 2♠ from the stock\.")
        d.type("declare 2s")
        d.expect(r"Game over after 1 round: You win with 0\.")
        d.type("rematch")
        found = d.expect(
            r"Rematch: a new table (\S+) with the same game and options; you sit there at your "
            r"seat and its bot seat gets the same bot, where the seats are free\."
        )
        new_id = found.group(1)
        d.expect(r"You sit at seat 0: portuguese e2e \(rematch\): portuguese")
        d.expect(r"Greedy bot 2 \(a bot\) sat down at seat 1\.")
        d.expect(r"The game begins: Ana and Greedy bot 2\.")
    finally:
        d.close()
    table = stubs.lobby.GetTable(lobby_service_pb2.GetTableRequest(table_id=new_id)).table
    assert table.variant == game_pb2.VARIANT_PORTUGUESE
    assert table.options.rounds == 1 and table.options.players == 2


def test_a_rematch_keeps_the_seats_and_the_bots_names(server: ServerThread, stubs: Stubs) -> None:
    """The bot sat first (seat 0, a name of its owner's), the player second: the rematch had
    the player at seat 0 and a bot of another name at seat 1, where "its bot seat gets the
    same bot" was said."""
    created = _created(stubs, "portuguese", [None, PORTUGUESE_HAND], "2s 2s", rounds=1)
    stubs.lobby.AddBot(
        lobby_service_pb2.AddBotRequest(
            table_id=created.table.table_id, policy="greedy", seat=0, name="Old Greedy"
        ),
        metadata=(("rami-token", created.owner_token),),
    )
    d = _client(server)
    try:
        d.expect(r"Connected to 127\.0\.0\.1")
        d.type("join 1")
        d.expect(r"You sit at seat 1")
        d.expect(r"It's your turn: take a card")
        d.type("draw stock")
        d.expect(r"You drew 2♠ from the stock\.")
        d.type("declare 2s")
        d.expect(r"Game over after 1 round: You win with 0\.")
        d.type("rematch")
        d.expect(r"you sit there at your seat and its bot seat gets the same bot, where the")
        d.expect(r"You sit at seat 1: portuguese e2e \(rematch\): portuguese")
        d.expect(r"Old Greedy \(a bot\) sat down at seat 0\.")
        d.expect(r"The game begins: ")
    finally:
        d.close()


def test_a_rematch_of_a_long_named_table_has_a_name_the_server_takes() -> None:
    from rami.client.session import MAX_TABLE_NAME, rematch_name

    assert rematch_name("portuguese e2e") == "portuguese e2e (rematch)"
    assert rematch_name("portuguese e2e (rematch)") == "portuguese e2e (rematch)"
    long = rematch_name("Friday night at the club, table two")  # 35 characters
    assert long == "Friday night at the club, tabl (rematch)" and len(long) <= MAX_TABLE_NAME


def test_join_with_no_table_says_once_how_to_start_one(server: ServerThread) -> None:
    # join with no table, in an empty lobby: one line saying so and how to start a table (not
    # the empty list's line and then another that says the same).
    d = _client(server)
    try:
        d.expect(r"Connected to 127\.0\.0\.1")
        d.expect(r"No tables yet: create tallage bots=3 starts one with bots\.")
        start = d.cursor
        d.type("join")
        d.expect(r"starts one")
        d.type("name")  # a marker: what join said is all before it
        d.expect(r"You join tables as Ana\.")
        said = d.screen.text()[start : d.cursor]
        assert said.count("starts one") == 1, said
    finally:
        d.close()


def test_declare_in_a_variant_without_declarations_says_so_first(
    server: ServerThread, stubs: Stubs
) -> None:
    # declare with no card, in simple: the rule, not a question about which card.
    _table(stubs, "simple", " ".join(TALLAGE_HAND.split()[:14]), "10c 5c")
    d = _client(server)
    try:
        _sit_with_a_bot(d, "simple")
        d.type("declare")
        d.expect(r"Declaring is for portuguese; in simple you lay your melds\. Nothing was sent\.")
        d.type("declare 2d")
        d.expect(r"Declaring is for portuguese; in simple you lay your melds\. Nothing was sent\.")
    finally:
        d.close()


def test_join_at_a_finished_table_says_the_game_is_over_and_offers_watch(
    server: ServerThread, stubs: Stubs
) -> None:
    _table(stubs, "portuguese", PORTUGUESE_HAND, "2s 2s", rounds=1)
    d = _client(server)
    try:
        _sit_with_a_bot(d, "portuguese")
        d.expect(r"It's your turn: take a card")
        d.type("draw stock")
        d.expect(r"You drew 2♠ from the stock\.")
        d.type("declare 2s")
        d.expect(r"Game over after 1 round: You win with 0\.")
        d.type("leave")
        d.expect(r"You are back in the lobby\.")
        d.type("join 1")
        d.expect(r"The game at that table is over: watch 1 shows how it ended\.")
        # And it does: the last round's end and the game's, as they were told live (a new
        # player's try found the final table alone, and the toolbar's winner).
        d.type("watch 1")
        d.expect(r"Watching ")
        d.expect(r"Round 1: Ana declared a complete hand\.")
        d.expect(r"Game over after 1 round: Ana wins with 0\.")
    finally:
        d.close()


#: Thirteen cards that make no meld together, for a second person who only draws and discards.
LOOSE_HAND = "Ac 3c 5c 7d 9d Jd 2h 4h 6h 8s 10s Qs Kc"


def _pair_game_over(server: ServerThread, stubs: Stubs) -> tuple[Driver, Driver]:
    """Ana and Bea, each in a client of their own, at a two-seat portuguese table whose game
    is over (Ana won); the clients are closed by the caller."""
    deck = stacked_deck("portuguese", [PORTUGUESE_HAND, LOOSE_HAND], "3s", "2s 2s")
    stubs.lobby.CreateTable(
        lobby_service_pb2.CreateTableRequest(
            name="pair",
            variant=VARIANT_IDS["portuguese"],
            options=game_pb2.Options(players=2, rounds=1),
            stacked_decks=[lobby_service_pb2.Deck(cards=[c + 1 for c in deck])],
        )
    )
    ana = _client(server)
    bea = _client(server, "Bea")
    ana.expect(r"1  \S+  waiting\s+pair: ")
    ana.type("join 1")
    ana.expect(r"You sit at seat 0")
    bea.expect(r"1  \S+  waiting\s+pair: ")
    bea.type("join 1")
    bea.expect(r"You sit at seat 1")
    bea.expect(r"It's your turn: take a card")
    bea.type("draw stock")
    bea.expect(r"You drew 2♠ from the stock\.")
    bea.type("discard 2s")
    ana.expect(r"It's your turn: take a card")
    ana.type("draw stock")
    ana.expect(r"You drew 2♠ from the stock\.")
    ana.type("declare 2s")
    ana.expect(r"Game over after 1 round: You win with 0\.")
    bea.expect(r"Game over after 1 round: Ana wins with 0\.")
    return ana, bea


def _rematches(stubs: Stubs) -> list[lobby_service_pb2.TableInfo]:
    listed = stubs.lobby.ListTables(lobby_service_pb2.ListTablesRequest()).tables
    return [t for t in listed if t.name == "pair (rematch)"]


def _ana_makes_the_rematch(ana: Driver) -> str:
    """Ana types ``rematch`` and sits at the new table; its id."""
    ana.type("rematch")
    new_id = ana.expect(r"Rematch: a new table (\S+) with the same game").group(1)
    ana.expect(r"You sit at seat 0: pair \(rematch\)")
    return new_id


def test_rematch_tells_the_other_players_the_new_table_in_the_chat(
    server: ServerThread, stubs: Stubs
) -> None:
    ana, bea = _pair_game_over(server, stubs)
    try:
        new_id = _ana_makes_the_rematch(ana)
        ana.expect(r"The game starts when Bea sits down \(they were told its id in this table's")
        bea.expect(
            rf"Ana: Rematch at table {new_id}: type rematch \(or join {new_id} from the lobby\)"
            r" to play again\."
        )
        bea.type("leave")
        bea.expect(r"You are back in the lobby")
        bea.type(f"join {new_id}")
        bea.expect(r"You sit at seat 1: pair \(rematch\)")
        ana.expect(r"The game begins: Ana and Bea\.")
    finally:
        bea.close()
        ana.close()


def test_the_second_players_rematch_sits_at_the_table_the_first_one_made(
    server: ServerThread, stubs: Stubs
) -> None:
    ana, bea = _pair_game_over(server, stubs)
    try:
        new_id = _ana_makes_the_rematch(ana)
        bea.expect(
            rf"Ana: Rematch at table {new_id}: type rematch \(or join {new_id} from the lobby\)"
            r" to play again\."
        )
        bea.type("rematch")  # not join: the same table, not another one
        bea.expect(rf"Rematch: another player of this game made table {new_id} for it")
        bea.expect(r"You sit at seat 1: pair \(rematch\)")
        ana.expect(r"Bea sat down at seat 1\.")
        ana.expect(r"The game begins: Ana and Bea\.")
        bea.expect(r"The game begins: Ana and Bea\.")  # her seat filled it: it began at once
    finally:
        bea.close()
        ana.close()
    assert [t.table_id for t in _rematches(stubs)] == [new_id]


def test_two_players_typing_rematch_at_once_meet_at_one_table(
    server: ServerThread, stubs: Stubs
) -> None:
    ana, bea = _pair_game_over(server, stubs)
    try:
        ana.type("rematch")
        bea.type("rematch")
        ana.expect(r"You sit at seat \d: pair \(rematch\)")
        bea.expect(r"You sit at seat \d: pair \(rematch\)")
    finally:
        bea.close()
        ana.close()
    (made,) = _rematches(stubs)
    assert made.status == lobby_service_pb2.TABLE_STATUS_PLAYING
    assert sorted(s.name for s in made.seats) == ["Ana", "Bea"]


def test_a_rematch_whose_table_has_started_without_you_says_so(
    server: ServerThread, stubs: Stubs
) -> None:
    ana, bea = _pair_game_over(server, stubs)
    try:
        new_id = _ana_makes_the_rematch(ana)
        stubs.lobby.JoinTable(lobby_service_pb2.JoinTableRequest(table_id=new_id, name="Cy"))
        # The game begins (Ana's client may have opened its stream on the game begun: then it
        # shows the game without telling its start).
        request = lobby_service_pb2.GetTableRequest(table_id=new_id)
        deadline = time.monotonic() + 10
        while stubs.lobby.GetTable(request).table.status != lobby_service_pb2.TABLE_STATUS_PLAYING:
            assert time.monotonic() < deadline, "the rematch's game did not begin"
            time.sleep(0.05)
        bea.type("rematch")
        bea.expect(
            rf"The rematch of this game, table {new_id}, has started without you: "
            rf"watch {new_id} follows it\."
        )
        bea.type("scores")  # still at the finished table
        bea.expect(r"Ana")
    finally:
        bea.close()
        ana.close()
    assert [t.table_id for t in _rematches(stubs)] == [new_id]


# -- every message is a sentence ----------------------------------------------------------------


def test_refusals_end_with_a_full_stop_even_after_a_parenthesis(
    server: ServerThread, stubs: Stubs
) -> None:
    from rami.client.checks import sentence

    assert sentence("watch which table? watch 2, or its id (tables lists them)") == (
        "Watch which table? watch 2, or its id (tables lists them)."
    )
    assert sentence("no server answers (is it running?)") == "No server answers (is it running?)"
    _table(stubs, "tallage", TALLAGE_HAND, "10c 5c", round_cap=1)
    d = _client(server)
    try:
        d.expect(r"Connected to 127\.0\.0\.1")
        d.type("watch")
        d.expect(r"Watch which table\? watch 2, or its id \(tables lists them\)\.\n")
        d.type("join 1")
        d.expect(r"You sit at seat 0")
        d.type("bot greedy")
        d.expect(r"It's your turn: you play first with 15 cards, without drawing\.")
        d.type("9c")  # a card alone: what to type instead
        d.expect(r"To discard it, type discard 9c; to lay it, .*\.\n")
        d.type("lay qs ks as, 8C 8D 8H, 7♥ 8♥ 9♥, 4c JK 6c")
        d.expect(r"and opened with 78")
        d.type("discard 2d")
        d.expect(r"It's your turn: take a card with draw stock")
        d.type("draw stock")
        d.type("take 4 5c")
        d.expect(
            r"Now say where the joker goes, e\.g\. add 3 JK or lay 10c Jc JK "
            r"\(cancel drops it\)\.\n"
        )
    finally:
        d.close()


def test_a_question_has_its_own_prompt_until_it_is_answered(
    server: ServerThread, stubs: Stubs
) -> None:
    _table(stubs, "portuguese", PORTUGUESE_HAND, "2s 2s", rounds=1)
    d = _client(server)
    try:
        _sit_with_a_bot(d, "portuguese")
        d.expect(r"It's your turn: take a card")
        d.type("draw stock")
        d.expect(r"You drew 2♠ from the stock\.")
        d.type("declare 3d")
        d.expect(r"Type y \(or yes\) to declare anyway; anything else does not\.")
        # A word typed there that is a command answers no, then runs: the question says so.
        d.expect(r"A command typed instead answers no, then runs\.")
        d.expect(r"declare anyway\? \[y/N\]> ")
        d.type("n")
        d.expect(r"Not declared\.")
        d.expect(r"your turn> ")
        d.type("quit")
        d.expect(r"Type y \(or yes\) to quit")
        d.expect(r"quit\? \[y/N\]> ")
        d.type("no")
        d.expect(r"You stay at the table\.")
        d.expect(r"your turn> ")
        # Portuguese stages nothing: undo says so, without tallage's words.
        d.type("undo")
        d.expect(r"Nothing to undo: in portuguese every command is sent as it is typed, and")
    finally:
        d.close()


# -- printed lines fit the window ---------------------------------------------------------------


def _said_to(d: Driver, command: str, last: str) -> list[str]:
    """The lines printed for ``command``, up to the end of ``last``: after the last echo of
    the command ("> draw") before them, not after the prompt's own line ("rami> draw"), which
    a screen drawn before Enter was handled shows too (and with a prompt of several lines, the
    echo is written over it, on the same line of the plain text)."""
    end = d.expect(last)
    text = d.screen.text()
    echo = f"> {command}\n"
    start = text.rfind(echo, 0, end.start())
    assert start >= 0, f"no echo of {command!r} before its reply:\n{text[-3000:]}"
    return text[start + len(echo) : end.end()].split("\n")


def test_messages_and_events_break_between_words_to_the_window(
    server: ServerThread, stubs: Stubs
) -> None:
    _table(stubs, "portuguese", PORTUGUESE_HAND, "2s 2s", rounds=1)
    look = Look(color=True, ascii=False)
    d = Driver(lambda: cli._connect(server.target, "Ana", look, None), columns=60).start()
    try:
        d.expect(r"watch\s+ID\s+follows\s+it\.")
        d.type("draw")  # not at a table: a long message
        shown = _said_to(d, "draw", r"create\s+starts\s+one\.")
        assert len(shown) > 1 and all(len(line) < 60 for line in shown), shown
        said = " ".join(line.strip() for line in shown)
        assert said == (
            "You are not at a table: tables lists them, join N or join ID sits at one, "
            "create starts one."
        ), shown
        d.type("join 1")
        d.expect(r"You sit at seat 0")
        d.type("bot greedy")
        d.expect(r"It's your turn: take a card")
        d.type("draw stock")
        d.type("declare 3d")  # a long question
        shown = _said_to(d, "declare 3d", r"does\s+not\.")
        assert len(shown) > 2 and all(len(line) < 60 for line in shown), shown
        assert shown[1].startswith("  "), shown  # the lines after the first are indented
    finally:
        d.close()


def test_a_started_table_is_offered_to_watch_and_a_spectator_is_told_the_chat_is_the_players(
    server: ServerThread, stubs: Stubs
) -> None:
    _table(stubs, "tallage", TALLAGE_HAND, "10c 5c", round_cap=1)
    ana = _client(server)
    bea = _client(server, "Bea")
    try:
        _sit_with_a_bot(ana, "tallage")
        bea.expect(r"Connected to 127\.0\.0\.1")
        bea.type("join 1")
        bea.expect(r"The game at that table has begun: no seat can be taken\. watch 1 follows it\.")
        bea.type("watch 1")
        bea.expect(r"Watching as a spectator")
        bea.type("say good luck")
        bea.expect(r"You are watching: the chat is the players'; you read it\. leave returns")
    finally:
        ana.close()
        bea.close()


def test_a_private_table_says_the_id_to_give_the_other_players(server: ServerThread) -> None:
    d = _client(server)
    try:
        d.expect(r"Connected to 127\.0\.0\.1")
        d.type("create simple private")
        table_id = d.expect(
            r"This table is private: it is not listed\. The other players join it with "
            r"join ([a-z2-7]{16}) \(its whole id\)\."
        ).group(1)
        d.type("table")
        d.expect(rf"\({table_id}\)")
    finally:
        d.close()


def test_a_spectator_at_the_end_of_a_game_is_not_offered_a_rematch(
    server: ServerThread, stubs: Stubs
) -> None:
    _table(stubs, "portuguese", PORTUGUESE_HAND, "2s 2s", rounds=1)
    ana = _client(server)
    bea = _client(server, "Bea")
    try:
        _sit_with_a_bot(ana, "portuguese")
        bea.expect(r"Connected to 127\.0\.0\.1")
        bea.type("watch 1")
        bea.expect(r"Watching as a spectator")
        ana.expect(r"It's your turn: take a card")
        ana.type("draw stock")
        ana.type("declare 2s")
        ana.expect(r"rematch starts a new table with the same game, options and bots")
        bea.expect(r"Game over after 1 round: Ana wins with 0\.")
        said = bea.expect(r"save FILE keeps the game record; (.*)leave goes back to the lobby\.")
        assert "rematch" not in said.group(1)
    finally:
        ana.close()
        bea.close()


def test_start_with_empty_seats_asks_first(server: ServerThread, stubs: Stubs) -> None:
    """``start`` begins the game with the seats taken so far, for good: with a seat still
    empty it asks first (a player who joined typed it, and the table's owner saw a game of two
    where three were meant)."""
    stubs.lobby.CreateTable(
        lobby_service_pb2.CreateTableRequest(
            name="three", variant=VARIANT_IDS["simple"], options=game_pb2.Options(players=3)
        )
    )
    d = _client(server)
    try:
        d.expect(r"Connected to 127\.0\.0\.1")
        d.type("join 1")
        d.expect(r"You sit at seat 0")
        d.type("bot greedy")
        d.expect(r"Greedy bot 2 \(a bot\) sat down at seat 1\.")
        d.type("start")
        d.expect(r"1 of 3 seats is empty: start now, with 2 players\?")
        d.expect(r"start now\? \[y/N\]> ")
        d.type("n")
        d.expect(r"Not started: the table waits for players\.")
        d.type("start")
        d.expect(r"start now\? \[y/N\]> ")
        d.type("y")
        d.expect(r"The game begins: Ana and Greedy bot 2\.")
    finally:
        d.close()


def test_tables_lists_the_games_that_are_over_only_when_asked(
    server: ServerThread, stubs: Stubs
) -> None:
    """A server keeps its finished and closed tables: listed with the open ones, they grew
    the list for good (14 rows after half an hour of one person's games). ``tables`` lists
    the open tables and counts the others; ``tables all`` lists every one."""
    for name in ("gone", "open one"):
        made = stubs.lobby.CreateTable(
            lobby_service_pb2.CreateTableRequest(name=name, variant=VARIANT_IDS["simple"])
        )
        if name == "gone":
            stubs.lobby.CloseTable(
                lobby_service_pb2.CloseTableRequest(table_id=made.table.table_id),
                metadata=(("rami-token", made.owner_token),),
            )
    d = _client(server)
    try:
        d.expect(r"Connected to 127\.0\.0\.1")
        d.expect(r"1  [a-z2-7]{6,16}  waiting\s+open one")
        d.expect(r"1 table whose game is over is not listed: tables all lists it\.")
        d.type("tables all")
        d.expect(r"2  [a-z2-7]{6,16}  closed\s+gone")
        d.type("tables")
        d.expect(r"1 table whose game is over is not listed")
        d.type("join 1")
        d.expect(r"You sit at seat 0")
    finally:
        d.close()


def test_a_question_the_game_s_end_answers_is_dropped(server: ServerThread, stubs: Stubs) -> None:
    """A player asked "leave?" whose game ends before they answer: the question no longer
    applies and is dropped, saying so; a y typed after it answers nothing (it was taken as
    leave's yes, a new player's try found)."""
    # The bot (first to play) lacks J♥ to declare; the player's clock runs out, the server
    # plays the seat, and the bot draws J♥ and declares: the one round, and the game, end.
    bot = "3d 4d 5d 7c 8c 9c 10c Ks Kd Kh 9h 10h 2s"
    deck = stacked_deck("portuguese", [None, bot], "3s", "5s 6s Jh")
    response = stubs.lobby.CreateTable(
        lobby_service_pb2.CreateTableRequest(
            name="portuguese e2e",
            variant=VARIANT_IDS["portuguese"],
            options=game_pb2.Options(players=2, rounds=1, turn_seconds=2),
            stacked_decks=[lobby_service_pb2.Deck(cards=[c + 1 for c in deck])],
        )
    )
    assert response.table.table_id
    d = _client(server)
    try:
        _sit_with_a_bot(d, "portuguese")
        d.expect(r"It's your turn: take a card")
        d.type("leave")
        d.expect(r"leave\? \[y/N\]>")
        d.expect(r"Greedy bot 2 declared", timeout=15)
        d.expect(r"The game is over: leave\? is no longer asked", timeout=10)
        d.type("y")
        d.expect(r"There is no command 'y'")
        d.type("table")  # still at the table, its end shown
        d.expect(r"Portuguese")
    finally:
        d.close()
