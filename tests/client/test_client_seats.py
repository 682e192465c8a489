"""Seats kept between runs of the client: written down when taken, taken back by ``join``
after a restart, forgotten when the game is over; a book that can't be read or written never
stops the client."""

from __future__ import annotations

import asyncio
import json
import re
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from client_harness import Driver
from client_server import ServerThread, Stubs

from rami.client import cli
from rami.client.convert import VARIANT_IDS
from rami.client.finder import TableFinder
from rami.client.link import Link
from rami.client.look import Look
from rami.client.seats import SavedSeat, SeatBook
from rami.client.session import TOLD_IN_FULL, ClientSession
from rami.server.table import TableConfig
from rami.server.testing import stacked_deck
from rami.v1 import game_pb2, lobby_service_pb2, table_service_pb2

PORTUGUESE_HAND = "3d 4d 5d 7c 8c 9c 10c Ks Kd Kh 9h JK Jh"
#: The server plays a seat whose player left only after 30 s: the game waits for Ana.
PATIENT = TableConfig(bot_delay=0.0, round_pause=0.0, away_delay=30.0, heartbeat=0.5)


def test_the_book_writes_finds_and_forgets_seats_per_server(tmp_path: Path) -> None:
    book = SeatBook(tmp_path / "state" / "rami" / "seats.json")
    assert book.at("h:1") == [] and book.find("h:1", "t1") is None
    book.save(SavedSeat("h:1", "t1", 2, "tok-a", "Ana's table"))
    book.save(SavedSeat("h:2", "t1", 0, "tok-b"))
    book.save(SavedSeat("h:1", "t1", 3, "tok-c"))  # the same table again: replaces
    assert book.find("h:1", "t1") == SavedSeat("h:1", "t1", 3, "tok-c")
    assert [s.server for s in SeatBook(book.path).at("h:2")] == ["h:2"]
    assert stat.S_IMODE(book.path.stat().st_mode) == 0o600  # the tokens are the seats
    book.forget("h:1", "t1")
    assert book.find("h:1", "t1") is None and book.find("h:2", "t1") is not None
    assert not book.problem


def test_a_book_that_cant_be_read_or_written_is_reported_not_raised(tmp_path: Path) -> None:
    broken = tmp_path / "seats.json"
    broken.write_text("{not json")
    book = SeatBook(broken)
    assert book.at("h:1") == [] and "can't read" in book.problem
    blocked = tmp_path / "file"
    blocked.write_text("")
    book = SeatBook(blocked / "rami" / "seats.json")  # its directory is a file
    book.save(SavedSeat("h:1", "t1", 0, "tok"))
    assert "can't write" in book.problem
    # Entries that are not seats are skipped, the others kept.
    mixed = tmp_path / "mixed.json"
    seat = {"server": "h:1", "table_id": "t2", "seat": 1, "token": "tok", "table_name": ""}
    mixed.write_text(json.dumps([{"server": "h:1"}, 7, seat]))
    assert SeatBook(mixed).at("h:1") == [SavedSeat("h:1", "t2", 1, "tok", "")]


def _client(server: ServerThread, book: SeatBook) -> Driver:
    look = Look(color=True, ascii=False)
    return Driver(lambda: cli._connect(server.target, "Ana", look, None, book)).start()


def test_a_seat_left_by_quitting_is_taken_back_by_a_new_client(tmp_path: Path) -> None:
    with ServerThread(str(tmp_path / "rami.db"), PATIENT) as server, Stubs(server.target) as stubs:
        _play_across_two_clients(server, stubs, SeatBook(tmp_path / "seats.json"))


def _kept_table(stubs: Stubs, private: bool = False) -> str:
    """A two-player portuguese table of one round, "kept", dealt PORTUGUESE_HAND to seat 0 and
    2♠ twice on top of the stock; its id."""
    deck = stacked_deck("portuguese", [PORTUGUESE_HAND, None], "3s", "2s 2s")
    created = stubs.lobby.CreateTable(
        lobby_service_pb2.CreateTableRequest(
            name="kept",
            variant=VARIANT_IDS["portuguese"],
            options=game_pb2.Options(players=2, rounds=1),
            stacked_decks=[lobby_service_pb2.Deck(cards=[c + 1 for c in deck])],
            private=private,
        )
    )
    return str(created.table.table_id)


def test_a_seat_at_a_private_table_is_offered_back_and_taken_by_join(tmp_path: Path) -> None:
    """A private table is not listed: a seat kept there was never offered back, and join
    with no table said no table had a free seat (a new player's try, after a closed window).
    The seats the book holds are asked for by their id."""
    book = SeatBook(tmp_path / "seats.json")
    with ServerThread(str(tmp_path / "rami.db"), PATIENT) as server, Stubs(server.target) as stubs:
        table_id = _kept_table(stubs, private=True)
        first = _client(server, book)
        try:
            first.expect(r"rami>")
            first.type(f"join {table_id}")
            first.expect(r"You sit at seat 0")
            first.type("bot greedy")
            first.expect(r"It's your turn: take a card")
            first.type("quit")
            first.expect(r"if you quit, the server plays your seat")
            first.type("yes")
            first.expect(r"You left the game")
        finally:
            first.close()
        second = _client(server, book)
        try:
            second.expect(
                rf"You hold seat 0 at the private table {table_id} \(kept\):"
                rf" join {table_id} takes it back\."
            )
            second.type("join")
            second.expect(r"You take seat 0 back: kept")
            second.type("draw stock")
            second.expect(r"You drew 2♠ from the stock\.")
        finally:
            second.close()


def _sit_to_turn(d: Driver) -> None:
    """Seat 0 at table 1 with a greedy bot beside it, to the player's first turn."""
    d.expect(r"1  [a-z2-7]{6,16}  waiting")
    d.type("join 1")
    d.expect(r"You sit at seat 0")
    d.type("bot greedy")
    d.expect(r"It's your turn: take a card")


def _play_across_two_clients(server: ServerThread, stubs: Stubs, book: SeatBook) -> None:
    _kept_table(stubs)
    first = _client(server, book)
    try:
        _sit_to_turn(first)
        first.type("quit")
        first.expect(r"The game is still on: if you quit, the server plays your seat")
        first.type("yes")
        first.expect(r"You left the game: the server plays your seat until you take it back")
    finally:
        first.close()
    (saved,) = book.at(server.target)
    assert saved.seat == 0 and saved.table_name == "kept"

    second = _client(server, book)
    try:
        second.expect(r"You hold seat 0 at table 1: join 1 takes it back\.")
        second.type("join")
        second.expect(r"You take seat 0 back: kept")
        second.type("draw stock")
        second.expect(r"You drew 2♠ from the stock\.")
        second.type("declare 2s")
        second.expect(r"Game over after 1 round: You win with 0\.")
    finally:
        second.close()
    assert book.at(server.target) == []  # the game is over: nothing to take back


def test_the_list_printed_again_when_it_moved_says_again_where_the_seat_is(
    tmp_path: Path,
) -> None:
    """``join 1`` refused because the list moved under the number prints the list again, and
    with it the line that says which number now holds the player's seat (it said nothing of
    the seat, the number having changed). And a list that is empty, or holds only games
    that are over, is a list: a number typed after it is out of it, and the line says that
    there are tables whose games are over rather than none at all."""
    with ServerThread(str(tmp_path / "rami.db"), PATIENT) as server, Stubs(server.target) as stubs:
        book = SeatBook(tmp_path / "seats.json")
        _kept_table(stubs)
        first = _client(server, book)
        try:
            _sit_to_turn(first)
            _quit_mid_game(first)
        finally:
            first.close()
        second = _client(server, book)
        try:
            second.expect(r"You hold seat 0 at table 1: join 1 takes it back\.")
            _kept_table(stubs)  # a new table, listed first
            second.type("join 1")
            second.expect(r"The tables have changed since the list you saw")
            second.expect(r"You hold seat 0 at table 2: join 2 takes it back\.")
        finally:
            second.close()
    with ServerThread(str(tmp_path / "other.db"), PATIENT) as server, Stubs(server.target) as stubs:
        created = stubs.lobby.CreateTable(
            lobby_service_pb2.CreateTableRequest(
                name="shut", variant=VARIANT_IDS["simple"], options=game_pb2.Options(players=2)
            )
        )
        stubs.lobby.CloseTable(
            lobby_service_pb2.CloseTableRequest(table_id=created.table.table_id),
            metadata=(("rami-token", created.owner_token),),
        )
        d = _client(server, SeatBook(tmp_path / "other.json"))
        try:
            d.expect(r"No open tables: create tallage bots=3 starts one with bots\.")
            d.expect(r"1 table whose game is over is not listed: tables all lists it\.")
            d.type("join 1")
            d.expect(r"The list you saw has no table: tables all lists those whose games are over")
        finally:
            d.close()


def test_a_seat_taken_back_after_its_draw_is_told_it_drew_not_that_it_plays_first(
    tmp_path: Path,
) -> None:
    """A player whose client dies after their draw takes the seat back in the middle of the
    turn: the turn is announced as it stands (the card drawn, what is left to do), not as a
    dealer's first turn without a draw (portuguese has none)."""
    book = SeatBook(tmp_path / "seats.json")
    with ServerThread(str(tmp_path / "rami.db"), PATIENT) as server, Stubs(server.target) as stubs:
        _kept_table(stubs)
        first = _client(server, book)
        try:
            _sit_to_turn(first)
            first.type("draw stock")
            first.expect(r"You drew 2♠ from the stock\.")
            time.sleep(0.2)
            crashed = book.path.read_bytes()  # the client dies here
        finally:
            first.close()
        book.path.write_bytes(crashed)
        second = _client(server, book)
        try:
            second.expect(r"You hold seat 0 at table 1: join 1 takes it back\.")
            second.type("join")
            second.expect(r"You take seat 0 back: kept")
            second.expect(
                r"It's your turn: you drew 2♠ this turn: discard CARD, or declare CARD \(the "
                r"card you put face down\)\."
            )
            assert "without drawing" not in second.screen.text()
            second.type("declare 2s")
            second.expect(r"Game over after 1 round: You win with 0\.")
        finally:
            second.close()


def _simple_table(stubs: Stubs, **options: int) -> None:
    """A two-player simple table of one round, "kept"."""
    stubs.lobby.CreateTable(
        lobby_service_pb2.CreateTableRequest(
            name="kept",
            variant=VARIANT_IDS["simple"],
            options=game_pb2.Options(players=2, round_cap=1, **options),
        )
    )


def _quit_mid_game(d: Driver) -> None:
    d.type("quit")
    d.type("yes")
    d.expect(r"You left the game: the server plays your seat until you take")


def _wait_for_the_end(stubs: Stubs) -> None:
    """Until the first table's game is over (the server plays it on)."""
    deadline = time.monotonic() + 60
    while (
        stubs.lobby.ListTables(lobby_service_pb2.ListTablesRequest()).tables[0].status
        != lobby_service_pb2.TABLE_STATUS_FINISHED
    ):
        assert time.monotonic() < deadline, "the game did not end"
        time.sleep(0.2)


def test_a_game_that_ended_while_away_is_told_and_its_seat_taken_back_to_see_the_end(
    tmp_path: Path,
) -> None:
    """The server plays a left seat to the game's end: the player's next client says so in the
    list, and join takes the seat back to tell what happened meanwhile, the game's end with it,
    and offers the rematch, as for a game played to its end at the table."""
    brisk = TableConfig(bot_delay=0.02, round_pause=0.02, away_delay=0.02, heartbeat=0.5)
    book = SeatBook(tmp_path / "seats.json")
    with ServerThread(str(tmp_path / "rami.db"), brisk) as server, Stubs(server.target) as stubs:
        _simple_table(stubs)
        first = _client(server, book)
        try:
            first.expect(r"1  [a-z2-7]{6,16}  waiting")
            first.type("join 1")
            first.expect(r"You sit at seat 0")
            first.type("bot greedy")
            first.expect(r"The game begins")
            _quit_mid_game(first)
        finally:
            first.close()
        _wait_for_the_end(stubs)
        second = _client(server, book)
        try:
            second.expect(
                r"The game at table 1, where you held seat 0, ended while you were away: join 1"
                r" tells how\."
            )
            second.type("join 1")
            second.expect(r"You take seat 0 back: kept")
            second.expect(r"While you were away \(\d+ updates?[;)]")
            second.expect(r"The server \(for you\) (drew|discarded)")
            second.expect(r"Game over after 1 round")
            second.expect(r"rematch starts a new table with the same game")
        finally:
            second.close()
        assert book.at(server.target) == []  # seen to its end: nothing left to take back


def test_a_game_that_ended_while_away_names_its_rematch(tmp_path: Path) -> None:
    """Another player of the game made its rematch while this one was away: the list's line
    about the game names the rematch's table (it was learnt only from the old table's chat,
    after joining it), and join takes the seat held in the game there (the first free seat
    was taken: seat 0, where the bot had sat)."""
    brisk = TableConfig(bot_delay=0.02, round_pause=0.02, away_delay=0.02, heartbeat=0.5)
    book = SeatBook(tmp_path / "seats.json")
    with ServerThread(str(tmp_path / "rami.db"), brisk) as server, Stubs(server.target) as stubs:
        created = stubs.lobby.CreateTable(
            lobby_service_pb2.CreateTableRequest(
                name="kept",
                variant=VARIANT_IDS["simple"],
                options=game_pb2.Options(players=2, round_cap=1),
            )
        )
        stubs.lobby.AddBot(
            lobby_service_pb2.AddBotRequest(
                table_id=created.table.table_id, policy="greedy", seat=0
            ),
            metadata=(("rami-token", created.owner_token),),
        )
        first = _client(server, book)
        try:
            first.expect(r"1  [a-z2-7]{6,16}  waiting")
            first.type("join 1")
            first.expect(r"You sit at seat 1")
            first.expect(r"The game begins")
            _quit_mid_game(first)
        finally:
            first.close()
        _wait_for_the_end(stubs)
        (held,) = book.at(server.target)
        old = stubs.lobby.GetTable(lobby_service_pb2.GetTableRequest(table_id=held.table_id))
        made = stubs.lobby.CreateTable(
            lobby_service_pb2.CreateTableRequest(
                name="again",
                variant=old.table.variant,
                options=old.table.options,
                rematch_of=held.table_id,
            ),
            metadata=(("rami-token", held.token),),
        )
        new_id = made.table.table_id
        second = _client(server, book)
        try:
            second.expect(
                r"held seat 1, ended while you were away: join \d tells how; its rematch is "
                rf"table {new_id}: join {new_id} to play\s+again\."
            )
            second.type(f"join {new_id}")
            second.expect(r"You sit at seat 1: again")
        finally:
            second.close()


@pytest.mark.parametrize(
    ("ending", "away", "late", "grace"),
    [
        ("quit", 1.0, 0.0, 30.0),
        ("crash", 1.0, 0.0, 30.0),
        ("quit", 2.5, 0.0, 30.0),
        ("quit", 1.0, 0.5, 30.0),
        ("crash", 1.0, 0.0, 0.3),
    ],
)
def test_taking_a_seat_back_tells_what_happened_while_away(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    ending: str,
    away: float,
    late: float,
    grace: float,
) -> None:
    # The server plays the seat once it is left, and the bot plays: a few moves are made
    # before Ana comes back, and her new client tells them before the table as it is. Also
    # after a crash or a closed window, where nothing is said to the server and the client
    # never gets to write down where its player was: the last update shown is written down
    # as each comes, so the new client tells what the server made for the seat, and only that.
    # ``late``: the list that join reads arrives that late, the table gone on meanwhile (as on
    # a busy machine), so the seat comes back some updates after the number listed. ``grace``:
    # the drop grace; a short one drops the crashed client's seat, as a quit leaves it: the
    # last update it showed is then from before the seat was away.
    brisk = TableConfig(
        bot_delay=0.05, round_pause=0.05, away_delay=0.05, heartbeat=0.5, drop_grace=grace
    )
    left = ending == "quit" or grace < away  # the seat is away when taken back
    book = SeatBook(tmp_path / "seats.json")
    with ServerThread(str(tmp_path / "rami.db"), brisk) as server, Stubs(server.target) as stubs:
        stubs.lobby.CreateTable(
            lobby_service_pb2.CreateTableRequest(
                name="kept",
                variant=VARIANT_IDS["portuguese"],
                options=game_pb2.Options(players=2, rounds=3),
            )
        )
        first = _client(server, book)
        crashed = b""
        try:
            first.expect(r"1  [a-z2-7]{6,16}  waiting")
            first.type("join 1")
            first.expect(r"You sit at seat 0")
            first.type("bot greedy")
            if ending == "quit":
                first.expect(r"The game begins")
                first.type("quit")
                first.type("yes")
                first.expect(r"You left the game: the server plays your seat until you take")
            else:
                first.expect(r"It's your turn")
                time.sleep(0.2)
                # What a client that dies here leaves on disk: the book as it is now.
                crashed = book.path.read_bytes()
        finally:
            first.close()
        if crashed:
            book.path.write_bytes(crashed)
        (saved,) = book.at(server.target)
        assert saved.seen > 0
        time.sleep(away)  # the server and the bot play on
        if late:
            listed = TableFinder.listed

            async def late_list(self: TableFinder) -> list[lobby_service_pb2.TableInfo]:
                answer = await listed(self)
                await asyncio.sleep(late)
                return answer

            monkeypatch.setattr(TableFinder, "listed", late_list)
        second = _client(server, book)
        try:
            second.expect(r"You hold seat 0 at table 1: join 1 takes it back\.")
            second.type("join")
            second.expect(r"You take seat 0 back: kept")
            missed = int(second.expect(r"While you were away \((\d+) updates?[;)]").group(1))
            start = second.cursor
            # The moves made meanwhile, told; the seat's own were the server's.
            second.expect(r"The server \(for you\) (drew|discarded)")
            second.expect(r"You are up to date:", timeout=15)
            story = second.screen.text()[start : second.cursor]
            if left:
                # The seat was left, so taking it back is an update of its own: told with
                # the rest, before the table as it is and its turn (it came after them).
                assert "You came back." in story, story
            told = re.findall(
                r"^(?!.*The server \(for you\)).*\b(drew|discarded|took)\b", story, re.M
            )
            if away > 2:  # some 50 updates: the brief way is tried
                assert missed > 2 * TOLD_IN_FULL, missed
            if missed > 2 * TOLD_IN_FULL:
                # Many: the others' moves of only the last ones are told one by one.
                assert 0 < len(told) <= TOLD_IN_FULL, (missed, told)
            # Never left out: every card the server threw from the seat's hand meanwhile.
            thrown = 0
            watch = stubs.table.Watch(
                table_service_pb2.WatchRequest(table_id=saved.table_id, after=saved.seen),
                metadata=(("rami-token", saved.token),),
                timeout=10,
            )
            for msg in watch:
                if msg.HasField("update"):
                    thrown += sum(
                        1
                        for e in msg.update.events
                        if e.WhichOneof("kind") == "card_discarded" and e.card_discarded.seat == 0
                    )
                    # Told up to the update listed, or, for a seat left, to the one that
                    # brought it back (later than listed when the table went on meanwhile).
                    back = any(e.WhichOneof("kind") == "player_returned" for e in msg.update.events)
                    if back or (not left and msg.update.number >= saved.seen + missed):
                        break
            watch.cancel()
            assert thrown > 0
            assert len(re.findall(r"The server \(for you\) discarded", story)) == thrown, story
            # The pile as the round made it, read back from before the updates missed: every
            # card of it by who threw it (or turned it up, or, a round just declared, put it
            # face down), none "from before you joined".
            second.type("pile")
            size = int(
                second.expect(
                    r"The discard pile \((\d+) cards?(, and \d+ taken from it)?\), the newest"
                ).group(1)
            )
            head = second.cursor
            # To its last row, the oldest card (turned up at the deal), or the note of older
            # ones left out: a busy machine draws the rows some time after the heading.
            second.expect(r"turned up|under them|no room in this window")
            second.expect(r"\n")
            listing = second.screen.text()[head : second.cursor]
            rows = re.findall(
                r"^ +\S+ +(turned up|discarded by [^,\n]+|face down: [^\n]+)(, taken by [^\n]+)?$",
                listing,
                re.MULTILINE,
            )
            # A long round's throws are more than the client keeps (KEEP): the oldest are
            # then told as a count, "and N older cards under them".
            older = re.search(r"and (\d+) older cards? under them", listing)
            under = int(older.group(1)) if older else 0
            assert len([r for r in rows if not r[1]]) + under == size, (size, under, listing)
            assert "from before you joined" not in second.screen.text()[head : second.cursor]
        finally:
            second.close()


def test_profiles_keep_their_own_seats_in_one_book(tmp_path: Path) -> None:
    path = tmp_path / "seats.json"
    eva, fred = SeatBook(path), SeatBook(path, "fred")
    eva.save(SavedSeat("h:1", "t1", 0, "tok-eva"))
    fred.save(SavedSeat("h:1", "t1", 1, "tok-fred"))
    assert eva.find("h:1", "t1") == SavedSeat("h:1", "t1", 0, "tok-eva", profile="default")
    assert fred.find("h:1", "t1") == SavedSeat("h:1", "t1", 1, "tok-fred", profile="fred")
    assert [s["profile"] for s in json.loads(path.read_text())] == ["default", "fred"]
    fred.forget("h:1", "t1")
    assert fred.find("h:1", "t1") is None and eva.find("h:1", "t1") is not None
    # One running client holds a profile at a time.
    assert eva.claim()
    assert not SeatBook(path).claim()
    assert SeatBook(path, "fred").claim()
    eva.release()
    assert SeatBook(path).claim()


@contextmanager
def _eva_then_fred(server: ServerThread, path: Path, start: bool) -> Iterator[Driver]:
    """Eva sits at table 1 (and, ``start``, fills it with a bot); then Fred, on the same
    account, starts a client while hers runs, and is told the profile is in use: his."""
    eva = _client(server, SeatBook(path))
    fred = None
    try:
        eva.expect(r"1  [a-z2-7]{6,16}  waiting")
        eva.type("join 1")
        eva.expect(r"You sit at seat 0")
        if start:
            eva.type("bot")
            eva.expect(r"It's your turn")
        fred = _client(server, SeatBook(path))
        fred.expect(r"Another rami-client is running with the profile 'default'")
        yield fred
    finally:
        eva.close()
        if fred is not None:
            fred.close()


def test_a_second_client_of_a_profile_is_never_offered_the_first_ones_seat(
    tmp_path: Path,
) -> None:
    with ServerThread(str(tmp_path / "rami.db"), PATIENT) as server, Stubs(server.target) as stubs:
        stubs.lobby.CreateTable(
            lobby_service_pb2.CreateTableRequest(
                name="shared", variant=VARIANT_IDS["tallage"], options=game_pb2.Options(players=3)
            )
        )
        path = tmp_path / "seats.json"
        with _eva_then_fred(server, path, start=False) as fred:
            fred.expect(r"1  [a-z2-7]{6,16}  waiting")
            fred.type("tables")
            fred.expect(r"1  [a-z2-7]{6,16}  waiting")
            fred.type("join 1")
            fred.expect(r"You sit at seat 1")  # a seat of his own, not Eva's
        assert [s.seat for s in SeatBook(path).at(server.target)] == [0]


def test_a_second_client_of_a_profile_told_no_seat_can_be_taken_is_told_why(
    tmp_path: Path,
) -> None:
    """Fred, on Eva's account, starts a client while hers runs and types ``join 1`` at the
    game she plays. It was refused "the game at that table has begun" alone (a new player's
    try): the one seat he could take back there is kept by the other client, and the line
    that said so at the start had long scrolled away."""
    with ServerThread(str(tmp_path / "rami.db"), PATIENT) as server, Stubs(server.target) as stubs:
        _kept_table(stubs)
        with _eva_then_fred(server, tmp_path / "seats.json", start=True) as fred:
            fred.expect(r"1  [a-z2-7]{6,16}  playing")
            fred.type("join 1")
            fred.expect(r"no seat can be taken")
            fred.expect(r"Your seat there is kept by the other rami-client of the profile")
            fred.expect(r"'default'")
            # At a game of others, where the profile holds no seat, nothing is said of one.
            others = stubs.lobby.CreateTable(
                lobby_service_pb2.CreateTableRequest(
                    name="others",
                    variant=VARIANT_IDS["simple"],
                    options=game_pb2.Options(players=2),
                )
            )
            for _ in range(2):
                stubs.lobby.AddBot(
                    lobby_service_pb2.AddBotRequest(
                        table_id=others.table.table_id, policy="greedy"
                    ),
                    metadata=(("rami-token", others.owner_token),),
                )
            head = fred.cursor
            fred.type(f"join {others.table.table_id}")
            fred.expect(r"no seat can be taken")
            fred.type("name")
            fred.expect(r"You join tables as Ana\.")
            assert "kept by" not in fred.screen.text()[head : fred.cursor]


def test_a_seat_taken_over_by_another_client_is_told_on_both_sides(tmp_path: Path) -> None:
    with ServerThread(str(tmp_path / "rami.db"), PATIENT) as server, Stubs(server.target) as stubs:
        stubs.lobby.CreateTable(
            lobby_service_pb2.CreateTableRequest(
                name="shared", variant=VARIANT_IDS["tallage"], options=game_pb2.Options(players=3)
            )
        )
        eva_book = SeatBook(tmp_path / "eva.json")
        eva = _client(server, eva_book)
        fred = None
        try:
            eva.expect(r"1  [a-z2-7]{6,16}  waiting")
            eva.type("join 1")
            eva.expect(r"You sit at seat 0")
            # Fred's client holds Eva's token (a seat book copied from her account).
            fred_book = SeatBook(tmp_path / "fred.json")
            (seat,) = eva_book.at(server.target)
            fred_book.save(seat)
            fred = _client(server, fred_book)
            fred.expect(r"You hold seat 0 at table 1")
            fred.type("join 1")
            fred.expect(r"You take seat 0 back")
            fred.expect(r"This seat was open in another client too")
            eva.expect(r"Another client took this seat over")
            eva.type("tables")
            eva.expect(r"You hold seat 0 at table 1")  # still hers to take back
        finally:
            eva.close()
            if fred is not None:
                fred.close()


def test_the_hands_order_is_the_profiles_choice_from_one_run_to_the_next(tmp_path: Path) -> None:
    path = tmp_path / "seats.json"

    async def session(book: SeatBook) -> ClientSession:
        return ClientSession(Link("127.0.0.1:9"), name="Ana", look=Look(), seats=book)

    first = asyncio.run(session(SeatBook(path)))
    assert not first.by_rank  # by suit, until asked
    first.toggle_sort()  # F2
    assert asyncio.run(session(SeatBook(path))).by_rank
    assert not asyncio.run(session(SeatBook(path, "fred"))).by_rank  # another profile's own
    asyncio.run(first._do_sort("suit"))
    assert not asyncio.run(session(SeatBook(path))).by_rank
    # An unreadable file is no choice: by suit, and the client goes on.
    path.with_name("prefs-default.json").write_text("{not json")
    assert not asyncio.run(session(SeatBook(path))).by_rank


def test_profiles_writing_the_book_at_once_lose_no_seat(tmp_path: Path) -> None:
    # A playing client writes its seat down at every update; another profile's client, on
    # the same account, takes seats meanwhile: each rewrite of the book is whole, and keeps
    # what the other wrote (a token lost is a seat that can't be taken back).
    import threading

    path = tmp_path / "seats.json"
    playing, other = SeatBook(path), SeatBook(path, "fred")
    playing.save(SavedSeat("h:1", "t0", 0, "tok"))
    done = threading.Event()

    def play() -> None:
        seen = 0
        while not done.is_set():
            seen += 1
            playing.save(SavedSeat("h:1", "t0", 0, "tok", seen=seen))

    thread = threading.Thread(target=play)
    thread.start()
    try:
        for i in range(100):
            other.save(SavedSeat("h:1", f"t{i + 1}", 1, f"tok-{i}"))
    finally:
        done.set()
        thread.join()
    assert len(other.at("h:1")) == 100 and len(playing.at("h:1")) == 1


def test_a_seat_left_in_play_is_taken_back_by_join(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # rami-client play: its server ends with the client, so no seat is written down; but
    # while it runs, a player who leaves the game takes the seat back as one who connected
    # does. A new player's try found `leave` then `join 1` refused ("no seat can be taken").
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    spec = cli.play_spec("simple", 2, "strong", ["turn_seconds=0"])
    look = Look(color=True, ascii=False)
    d = Driver(lambda: cli._play(spec, "Ana", look)).start()
    try:
        d.expect(r"It's your turn: you play first[\s\S]*your turn> ")
        d.type("leave")
        d.expect(r"if you leave, the server plays your seat until you take it back \(join\)")
        d.type("y")
        d.expect(r"You left the game: the server plays your seat until you take it back")
        d.expect(r"rami>")
        d.type("tables")
        d.expect(r"1  [a-z2-7]{6,16}  playing")
        d.type("join 1")
        d.expect(r"You take seat \d back")
        d.type("table")
        d.expect(r"Simple")
    finally:
        d.close()
    assert not (tmp_path / "state" / "rami" / "seats.json").exists()


def test_a_stock_rebuilt_while_away_is_told_among_the_rounds(tmp_path: Path) -> None:
    """Coming back after many updates, the moves are told only for the last ones, and before
    them the rounds, the chat and the players: the stock's rebuilds too, which bring a round
    nearer its end void (a new player's try came back to a stock rebuilt unsaid)."""
    brisk = TableConfig(bot_delay=0.01, round_pause=0.01, away_delay=0.01, heartbeat=0.5)
    book = SeatBook(tmp_path / "seats.json")
    with ServerThread(str(tmp_path / "rami.db"), brisk) as server, Stubs(server.target) as stubs:
        _simple_table(stubs, stock_rebuilds=1)
        first = _client(server, book)
        try:
            first.expect(r"1  [a-z2-7]{6,16}  waiting")
            first.type("join 1")
            first.expect(r"You sit at seat 0")
            table_id = stubs.lobby.ListTables(lobby_service_pb2.ListTablesRequest()).tables[0]
            other = stubs.lobby.JoinTable(
                lobby_service_pb2.JoinTableRequest(table_id=table_id.table_id, name="Bo")
            )
            first.expect(r"The game begins")
            # Both players go: the server plays both seats (a draw from the stock, the card
            # thrown back), so the stock runs out, is rebuilt once, runs out again: void.
            stubs.lobby.LeaveTable(
                lobby_service_pb2.LeaveTableRequest(table_id=table_id.table_id),
                metadata=(("rami-token", other.token),),
            )
            _quit_mid_game(first)
        finally:
            first.close()
        _wait_for_the_end(stubs)
        second = _client(server, book)
        try:
            second.type("join 1")
            second.expect(r"While you were away \(\d+ updates; the moves of the last")
            second.expect(r"The stock ran out and was rebuilt from the discard pile")
            second.expect(r"Nobody pays|void", timeout=15)
        finally:
            second.close()


def test_a_seat_at_a_table_the_server_no_longer_has_is_forgotten(tmp_path: Path) -> None:
    """A seat written down at a table the server does not know (its database replaced, say)
    was asked for at every tables and join, for ever."""
    book = SeatBook(tmp_path / "seats.json")
    with ServerThread(str(tmp_path / "rami.db"), PATIENT) as server:
        book.save(SavedSeat(server.target, "nosuchtable12345", 0, "token", "gone"))
        d = _client(server, book)
        try:
            d.expect(r"No tables yet")
            d.type("join")
            d.expect(r"> join\s+No tables yet")
            # A number out of an empty list, with nothing left out of it.
            d.type("join 1")
            d.expect(r"The list you saw has no table: create makes one, tables lists them anew")
        finally:
            d.close()
        assert book.at(server.target) == []


def test_the_commands_typed_are_recalled_in_the_next_run(tmp_path: Path) -> None:
    """Up recalls the commands of the last run too (a new player's try found only this
    run's): kept in a file of the profile's, beside the seat book, bounded to the newest."""
    from rami.client.history import KEEP, command_history

    book = SeatBook(tmp_path / "seats.json")
    with ServerThread(str(tmp_path / "rami.db"), PATIENT) as server:
        first = _client(server, book)
        try:
            first.expect(r"Connected to 127\.0\.0\.1")
            first.type("name Zed")
            first.expect(r"You will join tables as Zed\.")
        finally:
            first.close()
        second = _client(server, book)
        try:
            second.expect(r"Connected to 127\.0\.0\.1")
            second.keys("\x1b[A\x1b[A")  # quit, then name Zed
            second.keys("\r")
            second.expect(r"You will join tables as Zed\.")
        finally:
            second.close()
    path = tmp_path / "history-default"
    assert path.stat().st_mode & 0o077 == 0  # the owner's alone, as the seat book is
    # Bounded: the newest KEEP are kept, the file rewritten when it is read.
    history = command_history(path)
    for i in range(KEEP + 5):
        history.store_string(f"say {i}")
    loaded = list(command_history(path).load_history_strings())
    assert len(loaded) == KEEP and loaded[0] == f"say {KEEP + 4}", loaded[:2]
    assert loaded[-1] == "say 5"
    assert list(command_history(path).load_history_strings()) == loaded  # rewritten so
    assert path.stat().st_mode & 0o077 == 0  # and still the owner's alone
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".history")] == []
