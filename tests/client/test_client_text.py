"""What the client shows, as pure functions: cards, the hand, the panel and toolbar, events in
sentences, score tables, and other people's text made safe."""

from __future__ import annotations

import dataclasses
import io

import pytest
from prompt_toolkit.formatted_text import fragment_list_to_text

from rami.client import tableevents as te
from rami.client.cardtext import hand_fragments, meld_fragments, meld_text
from rami.client.convert import options_to_proto, view_from_proto
from rami.client.hints import hint_lines
from rami.client.look import Look
from rami.client.narrate import Scene, narrate
from rami.client.panel import (
    clock_text,
    panel_fragments,
    prompt_fragments,
    seat_names,
    table_lines,
    toolbar_fragments,
)
from rami.client.pile import Pile
from rami.client.printer import Printer, wrapped
from rami.client.safetext import cells, safe
from rami.client.scores import ending_text, game_table, round_table, score_sheet
from rami.engine import VARIANTS, Card, Meld, Options, Phase, TableMeld, View, parse_cards
from rami.engine import events as ev
from rami.v1 import game_pb2

LOOK = Look(color=True, ascii=False)
ASCII = Look(color=False, ascii=True)


def text(fragments: object) -> str:
    return fragment_list_to_text(fragments)  # type: ignore[arg-type]


def lines(out: list) -> list[str]:
    return [text(line) for line in out]


def C(code: str) -> Card:
    return Card.parse(code)


# -- cards and hands ---------------------------------------------------------------------------


def test_a_hand_is_sorted_by_suit_in_groups_or_by_rank() -> None:
    hand = parse_cards("Qs 2c JK 10h 3c 10d Ah")
    assert text(hand_fragments(hand, LOOK)) == "2♣ 3♣  10♦  A♥ 10♥  Q♠  JK"
    assert text(hand_fragments(hand, LOOK, by_rank=True)) == "A♥  2♣  3♣  10♦ 10♥  Q♠  JK"
    assert text(hand_fragments(hand, ASCII)) == "2c 3c  10d  Ah 10h  Qs  JK"


def test_suits_are_coloured_red_and_black_and_the_card_drawn_is_marked() -> None:
    frags = hand_fragments(parse_cards("9h 9s JK 9h"), LOOK, drawn=C("9h"))
    styles = {t: s for s, t, *_ in frags if t.strip()}
    assert styles["9♠"] == "class:card.black"
    assert styles["JK"] == "class:card.joker"
    red = [s for s, t, *_ in frags if t == "9♥"]
    assert red == ["class:card.red class:card.drawn", "class:card.red"]  # one copy marked


def test_a_joker_shows_the_card_it_stands_for() -> None:
    assert meld_text(Meld.parse("7h JK 9h"), LOOK) == "7♥ JK(8♥) 9♥"
    assert meld_text(Meld.parse("Ks Kd JK"), LOOK) == "K♦ K♠ JK(K♣/♥)"
    assert meld_text(Meld.parse("10c Jc JK"), ASCII) == "10c Jc JK(Qc)"
    assert ("class:card.joker", "(8♥)") in meld_fragments(Meld.parse("7h JK 9h"), LOOK)


def test_the_look_follows_no_color_dumb_terminals_and_the_encoding() -> None:
    class Tty(io.StringIO):
        encoding = "utf-8"

        def isatty(self) -> bool:
            return True

    assert Look.detect(Tty(), {"TERM": "xterm"}) == Look(color=True, ascii=False)
    assert not Look.detect(Tty(), {"TERM": "xterm", "NO_COLOR": "1"}).color
    assert not Look.detect(Tty(), {"TERM": "dumb"}).color
    assert not Look.detect(io.StringIO(), {"TERM": "xterm"}).color  # not a terminal

    class Latin1(Tty):
        encoding = "latin-1"

    assert Look.detect(Latin1(), {"TERM": "xterm"}).ascii
    assert ASCII.color_depth is not None  # colour off: one-bit rendering


# -- the panel and the toolbar -----------------------------------------------------------------


def _view(**fields: object) -> game_pb2.View:
    players = [
        game_pb2.PlayerState(
            seat=0,
            name="Ana",
            kind=game_pb2.SEAT_KIND_PLAYER,
            hand_size=14,
            total=12,
            connected=True,
        ),
        game_pb2.PlayerState(
            seat=1,
            name="Sara\x1b[2J",
            kind=game_pb2.SEAT_KIND_PLAYER,
            hand_size=11,
            total=34,
            opened=True,
            connected=True,
        ),
        game_pb2.PlayerState(
            seat=2,
            name="Strong bot 3",
            kind=game_pb2.SEAT_KIND_BOT,
            policy="strong",
            hand_size=14,
            connected=True,
        ),
    ]
    base: dict[str, object] = dict(
        table_id="t1",
        number=40,
        variant=game_pb2.VARIANT_TALLAGE,
        options=game_pb2.Options(players=3, opening=71, target=201),
        seat=0,
        phase=game_pb2.PHASE_DRAW,
        round=2,
        dealer=2,
        turn=0,
        players=players,
        hand=[c + 1 for c in parse_cards("9c 2h Ks JK 10d 10h 3c 4c 5c Qd Qh Qs 7s 8s")],
        stock_size=41,
        discard_top=C("9c") + 1,
        discard_size=9,
        bar=79,
        melds=[
            game_pb2.TableMeld(
                number=1,
                owner=1,
                meld=game_pb2.Meld(
                    kind=game_pb2.MELD_KIND_RUN, cards=[c + 1 for c in parse_cards("Qc Kc Ac")]
                ),
            )
        ],
        draw_sources=[game_pb2.DRAW_SOURCE_STOCK, game_pb2.DRAW_SOURCE_DISCARD],
    )
    base.update(fields)
    return game_pb2.View(**base)  # type: ignore[arg-type]


def test_the_ascii_look_writes_the_servers_cards_as_it_writes_its_own() -> None:
    """A refusal's text is the server's, which names cards with suit symbols: in the ASCII
    look (``--ascii``, or a terminal that can't show them) they are written as codes."""
    ascii_look = Look(color=False, ascii=True)
    said = "Refused: Q♦ Q♥ K♦ is neither a run (one suit) nor a set. Nothing was played."
    assert ascii_look.text(said) == (
        "Refused: Qd Qh Kd is neither a run (one suit) nor a set. Nothing was played."
    )
    out = Printer(ascii_look)
    out.error(said)
    assert out.recent[-1][0] == [("class:bad", ascii_look.text(said))]
    assert Look(color=False, ascii=False).text(said) == said
    # Symbols that name no card (the engine's list of the ways to write a suit) stay.
    suits = "not a card: '9x' (suit must be one of c d h s or ♣ ♦ ♥ ♠)"
    assert ascii_look.text(suits) == suits
    assert ascii_look.text("10♥ and A♠, J♣") == "10h and As, Jc"


def test_the_toolbar_says_whose_turn_the_clock_the_table_and_the_players() -> None:
    view = _view()
    view.turn_deadline.FromSeconds(1000)
    bar = text(toolbar_fragments(view, LOOK, now=958.0, width=120))
    turn, facts, players = bar.split("\n")
    assert turn.strip() == "Your turn: draw stock or draw discard (9♣) to lay it at once   ⏱ 0:42"
    assert facts.strip() == (
        "Tallage · round 2 · bar 79 (open with 80+) · game ends at 201 · stock 41 · pile top 9♣"
    )
    assert players == (
        "▶You 14 cards, 12 pts │  Sara 11 cards, 34 pts, opened │  Strong bot 3 14 cards, 0 pts, "
        "dealer"
    )


def test_the_bar_and_what_opens_are_told_while_a_round_is_played() -> None:
    """Once the game is over the toolbar still said "bar 79 (open with 80+)"; between rounds,
    what opens no longer applies to the round that ended."""
    facts = text(toolbar_fragments(_view(phase=game_pb2.PHASE_PLAY), LOOK, width=200))
    assert "bar 79 (open with 80+)" in facts, facts
    between = text(toolbar_fragments(_view(phase=game_pb2.PHASE_ROUND_OVER), LOOK, width=200))
    assert "bar 79" in between and "open with" not in between, between
    over = text(toolbar_fragments(_view(phase=game_pb2.PHASE_GAME_OVER), LOOK, width=200))
    assert "bar" not in over, over


def test_the_toolbar_marks_others_away_but_never_the_player_reading_it() -> None:
    """A game that ended while its player was away says so of the seat; the player who took
    it back and reads the toolbar is there."""
    view = _view(phase=game_pb2.PHASE_GAME_OVER)
    for p in view.players:
        p.away = True
    players = text(toolbar_fragments(view, LOOK, width=200)).split("\n")[-1]
    you, sara, bot = players.split("│")
    assert "away" not in you and "away" in sara and "away" in bot, players


def test_the_clock_is_never_broken_from_its_time() -> None:
    """Where the turn's line is too long for the window, the clock goes to the next line
    whole: never its sign at the end of one line and its time on the next."""
    view = _view()
    view.turn_deadline.FromSeconds(1000)
    for width in range(50, 90):
        bar = text(toolbar_fragments(view, LOOK, now=958.0, width=width)).split("\n")
        assert sum("⏱ 0:42" in line for line in bar) == 1, (width, bar)
        assert all(cells(line) < width for line in bar), (width, bar)


def test_the_clock_is_not_shown_while_the_connection_is_lost() -> None:
    # The clock is not known then (a restarted server starts the turn's clock again):
    # counting the old one down to 0:00 told the player their time was up when it was not.
    view = _view()
    view.turn_deadline.FromSeconds(1000)
    note = "connection lost: reconnecting..."
    turn = text(toolbar_fragments(view, LOOK, now=958.0, width=120, note=note)).split("\n")[0]
    assert turn.startswith(" connection lost: reconnecting...   Your turn: draw stock"), turn
    assert "⏱" not in turn


def test_with_the_discard_staged_the_toolbar_asks_for_the_lay_that_uses_it() -> None:
    turn = text(toolbar_fragments(_view(), LOOK, width=200, staged=True)).split("\n")[0]
    assert turn == " Your turn: now type the lay that uses 9♣ (cancel drops it)", turn


def test_with_a_joker_taken_back_staged_the_toolbar_asks_where_it_goes() -> None:
    """A take waits for its joker's place: the toolbar went on saying "lay, add or take
    back jokers if you like, then discard" (a new player's try)."""
    view = _view(phase=game_pb2.PHASE_PLAY)
    turn = text(toolbar_fragments(view, LOOK, width=200, staged=True, joker=True)).split("\n")[0]
    assert turn.startswith(" Your turn: now say where the joker goes"), turn


def test_the_toolbar_breaks_its_lines_to_fit_the_terminal() -> None:
    bar = text(toolbar_fragments(_view(), LOOK, width=80, rows=24)).split("\n")
    assert bar == [
        " Your turn: draw stock or draw discard (9♣) to lay it at once",
        " Tallage · round 2 · bar 79 (open with 80+) · game ends at 201 · stock 41",
        " pile top 9♣",  # (it said "discard 9♣": on a line of its own, read as a move)
        "▶You 14 cards, 12 pts │  Sara 11 cards, 34 pts, opened",
        " Strong bot 3 14 cards, 0 pts, dealer",
    ]
    # A small window: fewer words, and no line longer than the window (words kept whole).
    bar = [
        b.rstrip() for b in text(toolbar_fragments(_view(), LOOK, width=60, rows=15)).split("\n")
    ]
    assert bar == [
        " Your turn: draw stock or draw discard (9♣) to lay it at",
        " once",
        " Tallage · round 2 · bar 79 · to 201 · stock 41 · pile 9♣",
        "▶You 14c 12p │  Sara 11c 34p open │  Strong bot 3 14c 0p D",
    ]
    assert all(len(line) < 60 for line in bar)


def test_the_panel_fits_a_small_window_and_keeps_room_for_the_events() -> None:
    view = _view(phase=game_pb2.PHASE_PLAY)
    panel = text(panel_fragments(view, LOOK, width=60, rows=15)).split("\n")
    assert panel[:2] == [
        "Table [1] Sara: Q♣ K♣ A♣",
        "Hand  3♣ 4♣ 5♣ 9♣  10♦ Q♦  2♥ 10♥ Q♥  7♠ 8♠ Q♠ K♠  JK  (14)",
    ]
    # Many melds: only the newest that fit the room left, and how many more table shows.
    meld = view.melds[0]
    for n in range(2, 9):
        view.melds.add(number=n, owner=1, meld=meld.meld)
    panel = text(panel_fragments(view, LOOK, width=60, rows=15)).split("\n")
    assert panel[0].startswith("Table +") and "(table)" in panel[0] and "[8] Sara" in panel[0]
    assert panel[1].startswith("Hand ")
    assert all(len(line) < 60 for line in panel)
    tall = text(panel_fragments(view, LOOK, width=80, rows=24)).split("\n")
    assert tall[0].startswith("Table    [1] Sara") and sum(t.count("Sara:") for t in tall) == 8
    # A label as long as the small window's room still has a space after it.
    staged = text(panel_fragments(view, LOOK, width=60, rows=15, staged="draw discard (9♣)"))
    assert "Staged draw discard (9♣)" in staged, staged


def test_a_name_of_24_characters_keeps_a_space_before_the_seats_facts() -> None:
    view = _view()
    view.players[1].name = "Bartholomew-Longname-XYZ"
    out = lines(table_lines(view, LOOK))
    assert "    Bartholomew-Longname-XYZ seat 1 · 11 cards · 34 points · opened" in out, out
    assert "  ▶ You                      seat 0 · 14 cards · 12 points" in out, out


def test_players_of_one_name_are_told_apart_by_their_seats() -> None:
    # Names are the players' own choice: two may pick the same, or the word the client says
    # for its own player. Who did what must still be plain, in the narration and the table.
    view = _view()
    view.players[1].name = "you"
    view.players[2].name = "Ana"
    view.players.add(seat=3, name="ana", kind=game_pb2.SEAT_KIND_PLAYER, hand_size=14)
    view.players.add(seat=4, name="Bartholomew-Longname-XYZ", kind=game_pb2.SEAT_KIND_PLAYER)
    view.players.add(seat=5, name="Bartholomew-Longname-XYZ", kind=game_pb2.SEAT_KIND_PLAYER)
    assert seat_names(view) == [
        "You",
        "you (seat 1)",
        "Ana (seat 2)",
        "ana (seat 3)",
        "Bartholomew-Lon (seat 4)",
        "Bartholomew-Lon (seat 5)",
    ]
    # A name chosen as another's mark is told apart too; so are names alike once normalised
    # (full-width letters).
    view.players[4].name = "Ana (seat 2)"
    view.players[5].name = "Ｂｏｂ"
    view.players.add(seat=6, name="bob", kind=game_pb2.SEAT_KIND_PLAYER)
    assert seat_names(view) == [
        "You",
        "you (seat 1)",
        "Ana (seat 2)",
        "ana (seat 3)",
        "Ana (seat 2) (seat 4)",
        "Ｂｏｂ (seat 5)",
        "bob (seat 6)",
    ]
    del view.players[4:]
    # Only a name another seat shares is told apart; a spectator has no "You".
    view.players[2].name = "Strong bot 3"
    view.ClearField("seat")
    assert seat_names(view)[:4] == ["Ana (seat 0)", "you", "Strong bot 3", "ana (seat 3)"]


def test_the_table_says_which_cards_a_player_is_known_to_hold() -> None:
    view = _view(variant=game_pb2.VARIANT_SIMPLE)
    view.players[1].known.extend(c + 1 for c in parse_cards("7h 9c"))
    out = lines(table_lines(view, LOOK))
    at = out.index(next(line for line in out if "Sara" in line and "seat 1" in line))
    assert out[at + 1].strip() == "known to hold 7♥ 9♣", out
    assert sum("known to hold" in line for line in out) == 1  # the others hold none known


def test_the_toolbar_names_the_player_to_move_and_what_they_do() -> None:
    bar = text(toolbar_fragments(_view(turn=1, phase=game_pb2.PHASE_PLAY), ASCII))
    assert bar.startswith(" Sara's turn (playing)")
    assert ">Sara 11 cards" in bar.split("\n")[2]
    bar = text(toolbar_fragments(_view(phase=game_pb2.PHASE_PLAY, can_lay=True), LOOK))
    assert "Your turn: open with melds worth 80 or more if you can, then discard" in bar
    assert clock_text(_view(), 0.0, LOOK) == ""  # no clock at this table


def test_after_a_simple_finish_the_toolbar_says_to_discard_the_last_card() -> None:
    view = _view(phase=game_pb2.PHASE_PLAY, variant=game_pb2.VARIANT_SIMPLE, hand=[C("Qd") + 1])
    view.players[0].hand_size = 1
    bar = text(toolbar_fragments(view, LOOK, width=120))
    assert bar.startswith(" Your turn: discard your last card to go out"), bar
    assert "You 1 card, 12 pts" in bar


def test_the_panel_shows_the_melds_with_owners_and_the_sorted_hand() -> None:
    view = _view(phase=game_pb2.PHASE_PLAY, drawn=C("10h") + 1)
    panel = text(panel_fragments(view, LOOK, staged="draw discard (9c)"))
    assert panel.split("\n")[:3] == [
        "Table    [1] Sara: Q♣ K♣ A♣",
        "Hand     3♣ 4♣ 5♣ 9♣  10♦ Q♦  2♥ 10♥ Q♥  7♠ 8♠ Q♠ K♠  JK   (14 cards, by suit; F2 sorts)",
        "Staged   draw discard (9c)",
    ]
    assert text(prompt_fragments(view, LOOK)) == "your turn> "
    assert text(prompt_fragments(_view(turn=1), LOOK)) == "> "
    watching = _view()
    watching.ClearField("seat")
    assert "Watching as a spectator" in text(panel_fragments(watching, LOOK))
    assert text(prompt_fragments(watching, LOOK)) == "watching> "


def test_a_hand_note_broken_onto_its_own_line_lines_up_with_the_cards() -> None:
    hand = [c + 1 for c in parse_cards("2c 4c 7c 10c 4d Jd Jd 4h 5h 9h 10h As 4s Qs Ks")]
    panel = text(panel_fragments(_view(hand=hand, melds=[]), LOOK, width=80)).split("\n")
    assert panel[1:3] == [
        "Hand     2♣ 4♣ 7♣ 10♣  4♦ J♦ J♦  4♥ 5♥ 9♥ 10♥  A♠ 4♠ Q♠ K♠",
        "         (15 cards, by suit; F2 sorts)",
    ], panel


def test_the_whole_table_lists_players_and_melds_last() -> None:
    """The melds come last, nearest the prompt: in a small window the lines printed first
    scroll away, and add and take need the melds' numbers."""
    out = lines(table_lines(_view(), ASCII, "Friday"))
    assert out[0] == 'Table "Friday" (t1)'
    assert out[2].startswith("  > You") and "14 cards - 12 points" in out[2]
    assert "opened" in out[3] and "strong bot" in out[4]
    assert out[-1] == "  [1] Sara: Qc Kc Ac"


# -- events in sentences -----------------------------------------------------------------------


NAMES = ("Ana", "Sara", "Strong bot 3")


def _scene(**fields: object) -> Scene:
    return Scene(NAMES, LOOK, **fields)  # type: ignore[arg-type]


def test_an_opening_is_told_with_its_value_and_the_new_bar() -> None:
    melds = ((1, TableMeld(1, Meld.parse("Qc Kc Ac"))), (2, TableMeld(1, Meld.parse("8c 8d 8h"))))
    laid = ev.Laid(
        1,
        (1, 2),
        (),
        melds,
        tuple(parse_cards("Qc Kc Ac 8c 8d 8h")),
        opened=True,
        opening_value=79,
        bar=79,
    )
    assert lines(narrate(laid, _scene(me=0))) == [
        "Sara laid [1] Q♣ K♣ A♣ and [2] 8♣ 8♦ 8♥ and opened with 79; the bar is now 79."
    ]


def test_a_whole_hand_finish_is_told_as_one_not_as_an_opening() -> None:
    """A whole-hand finish needs neither the 71 nor the bar, and ends the round: one that is
    worth an opening was told "and opened with 79; the bar is now 79", a bar nobody will
    meet (it starts again at 0 next round)."""
    melds = (
        (1, TableMeld(1, Meld.parse("Qc Kc Ac"))),
        (2, TableMeld(1, Meld.parse("8c 8d 8h"))),
        (3, TableMeld(1, Meld.parse("4s 5s 6s 7s"))),
    )
    laid = ev.Laid(
        1,
        (1, 2, 3),
        (),
        melds,
        tuple(parse_cards("Qc Kc Ac 8c 8d 8h 4s 5s 6s 7s")),
        opened=True,
        opening_value=101,
        bar=101,
        finish=True,
    )
    assert lines(narrate(laid, _scene(me=0))) == [
        "Sara laid [1] Q♣ K♣ A♣, [2] 8♣ 8♦ 8♥ and [3] 4♠ 5♠ 6♠ 7♠, leaving one card to discard."
    ]


def test_additions_and_jokers_taken_back_are_told_per_meld() -> None:
    before = {3: Meld.parse("7h 8h 9h"), 4: Meld.parse("4c JK 6c")}
    after = (
        (3, TableMeld(0, Meld.parse("7h 8h 9h JK"))),
        (4, TableMeld(1, Meld.parse("4c 5c 6c"))),
    )
    laid = ev.Laid(0, (), (4, 3), after, (C("5c"),), jokers_taken=1)
    assert lines(narrate(laid, _scene(me=0, melds_before=before))) == [
        "You took back the joker from [4] with 5♣ and added JK to [3] (now 7♥ 8♥ 9♥ JK(10♥))."
    ]


def test_a_card_added_beside_the_one_that_took_a_joker_back_is_told_as_added() -> None:
    # take 7 3d; lay 5c 5h JK; add 7 3s: only 3♦ took the joker back, 3♠ was added.
    before = {7: Meld.parse("3c 3h JK")}
    after = (
        (7, TableMeld(1, Meld.parse("3c 3d 3h 3s"))),
        (8, TableMeld(0, Meld.parse("5c 5h JK"))),
    )
    laid = ev.Laid(0, (8,), (7,), after, tuple(parse_cards("3d 3s 5c 5h")), jokers_taken=1)
    assert lines(narrate(laid, _scene(me=0, melds_before=before))) == [
        "You laid [8] 5♣ 5♥ JK(5♦/♠) and took back the joker from [7] with 3♦ and added 3♠"
        " to it (now 3♣ 3♦ 3♥ 3♠)."
    ]
    # In a run, the card that takes the joker back is the one it stood for.
    before = {2: Meld.parse("4c JK 6c")}
    after = ((2, TableMeld(1, Meld.parse("3c 4c 5c 6c 7c"))),)
    laid = ev.Laid(0, (), (2,), after, tuple(parse_cards("3c 5c 7c")), jokers_taken=1)
    assert lines(narrate(laid, _scene(me=0, melds_before=before))) == [
        "You took back the joker from [2] with 5♣ and added 3♣ 7♣ to it (now 3♣ 4♣ 5♣ 6♣ 7♣)."
    ]


def test_a_joker_taken_back_and_laid_again_on_its_meld_is_told() -> None:
    """Found by a new player's try: take 4 3d then add 4 JK was told as "You added 3♦ to
    [4]", the take never mentioned."""
    before = {4: Meld.parse("3h 3s JK")}
    after = ((4, TableMeld(0, Meld.parse("3d 3h 3s JK"))),)
    laid = ev.Laid(0, (), (4,), after, (C("3d"),), jokers_taken=1)
    assert lines(narrate(laid, _scene(me=0, melds_before=before))) == [
        "You added 3♦ to [4] (now 3♦ 3♥ 3♠ JK(3♣)), taking its joker back and laying it again."
    ]


def test_draws_say_the_card_only_to_the_one_who_drew_it() -> None:
    assert lines(narrate(ev.Drew(0, "stock"), _scene(me=0, drawn=C("7h")))) == [
        "You drew 7♥ from the stock."
    ]
    assert lines(narrate(ev.Drew(1, "stock"), _scene(me=0, drawn=C("7h")))) == [
        "Sara drew from the stock."
    ]
    assert lines(narrate(ev.Drew(1, "discard", C("9c")), _scene())) == [
        "Sara took 9♣ from the discard pile."
    ]


def test_a_round_start_says_who_deals_and_who_plays_first() -> None:
    e = ev.RoundStarted(2, 1, "", C("3s"), 2)
    assert lines(narrate(e, _scene(me=2))) == [
        "Round 2: Sara deals; You play first; 3♠ is turned up."
    ]
    e = ev.RoundStarted(1, 0, "", C("3s"), 0)
    assert lines(narrate(e, _scene(me=0))) == ["Round 1: You deal and play first; 3♠ is turned up."]


def test_chat_and_names_from_others_reach_the_screen_clean() -> None:
    chat = lines(narrate(te.Chatted(1, "hi\x1b]0;owned\x07 \x1b[31mthere\u202e!"), _scene(me=0)))
    assert chat == ["Sara: hi there!"]
    joined = lines(narrate(te.Joined(2, "Eve\x1b[2J\x9b31m\nbot", True), _scene(me=0)))
    assert joined == ["Eve bot (a bot) sat down at seat 2."]
    assert "\x1b" not in "".join(chat + joined)
    # One's own: "You sit at seat 0: ..." has said it, as the join's answer.
    assert narrate(te.Joined(0, "Ana", False), _scene(me=0)) == []


def test_the_end_of_a_round_prints_what_everyone_paid() -> None:
    result = ev.RoundResult(
        1,
        "rami",
        1,
        (47, 0, 6),
        (47, 0, 6),
        1,
        (tuple(parse_cards("7c Kd As JK")), (), tuple(parse_cards("3h 3s"))),
    )
    out = lines(narrate(ev.RoundEnded(result), _scene(me=0)))
    assert out[0] == "Round 1: Sara went out (Rami)."
    assert out[1].split() == ["player", "paid", "total", "left", "in", "hand"]
    assert out[2].split() == ["You", "47", "47", "7♣", "K♦", "A♠", "JK"]
    assert out[3].split() == ["Sara", "0", "0", "(went", "out)"]
    assert out[4].split() == ["Strong", "bot", "3", "6", "6", "3♥", "3♠"]


def test_the_moves_made_for_an_absent_player_are_the_servers_and_the_rest_is_theirs() -> None:
    """Told on coming back: the server made the seat's moves ("The server (for you)"), but
    the rounds dealt, paid and won, and the standings, are the player's own ("You")."""
    scene = dataclasses.replace(_scene(me=0), stand_in="The server (for you)")
    assert lines(narrate(ev.Discarded(0, C("3s")), scene)) == ["The server (for you) discarded 3♠."]
    start = lines(narrate(ev.RoundStarted(2, 0, "", C("3s"), 1), scene))
    assert start == ["Round 2: You deal; Sara plays first; 3♠ is turned up."]
    result = ev.RoundResult(1, "rami", 0, (0, 47, 6), (0, 47, 6), 1, ((), (C("7c"),), (C("3h"),)))
    out = lines(narrate(ev.RoundEnded(result), scene))
    assert out[0] == "Round 1: You went out (Rami).", out
    assert out[2].split()[:3] == ["You", "0", "0"]
    assert lines(narrate(te.Returned(0), scene)) == ["You came back."]
    standings = lines(narrate(ev.GameEnded((0, 47, 6), (0,)), scene))
    assert standings[0].startswith("Game over after"), standings
    assert "You wins" not in standings[0] and "You win" in standings[0], standings
    assert [ln.split()[1] for ln in standings[1:]] == ["You", "Strong", "Sara"]


def test_a_declaration_with_a_multiplier_shows_what_each_paid_times_it() -> None:
    hands = (tuple(parse_cards("Kc Qd Jh 10s")), (), tuple(parse_cards("2c")))
    result = ev.RoundResult(1, "declare", 1, (160, 0, 8), (160, 0, 8), 4, hands)
    scene = _scene(me=0, variant=VARIANTS["portuguese"])
    out = lines(narrate(ev.RoundEnded(result), scene))
    assert out[0] == "Round 1: Sara declared a complete hand (x4)."
    assert out[2].split()[:3] == ["You", "160", "160"]
    assert out[2].endswith("(40 x4)"), out[2]
    assert out[3].split() == ["Sara", "0", "0", "(declared)"]
    assert out[4].endswith("(2 x4)"), out[4]


def test_after_a_declaration_every_hand_is_shown_its_melds_beside_what_it_paid() -> None:
    """A portuguese round's end shows every hand: the cards paid for, and under them the
    melds that were not (the hand's best split)."""
    hands = (tuple(parse_cards("4h 5h 6h 9c Kd")), (), tuple(parse_cards("2c")))
    result = ev.RoundResult(1, "declare", 1, (22, 0, 2), (22, 0, 2), 1, hands)
    out = lines(narrate(ev.RoundEnded(result), _scene(me=0, variant=VARIANTS["portuguese"])))
    assert out[2].split() == ["You", "22", "22", "9♣", "K♦"], out
    assert out[3].split() == ["melds", "kept:", "[4♥", "5♥", "6♥]"], out
    assert out[4].split() == ["Sara", "0", "0", "(declared)"], out
    assert out[5].split() == ["Strong", "bot", "3", "2", "2", "2♣"], out
    assert len(out) == 6, out


def test_the_end_of_the_game_ranks_the_totals() -> None:
    out = text(game_table((47, 0, 6), (1,), ["You", "Sara", "Strong bot 3"], 3)).splitlines()
    assert out[0] == "Game over after 3 rounds: Sara wins with 0."
    assert [ln.split()[:2] for ln in out[1:]] == [["1.", "Sara"], ["2.", "Strong"], ["3.", "You"]]
    assert round_table(ev.RoundResult(2, "void", None, (0, 0), (5, 6)), ["You", "Sara"], LOOK)
    # Several winners: a list, not a chain of "and".
    names = ["You", "Sara", "Bo", "Strong bot 4"]
    tied = text(game_table((0, 0, 0, 5), (0, 1, 2), names, 1)).splitlines()
    assert tied[0] == "Game over after 1 round: You, Sara and Bo win with 0.", tied
    two = text(game_table((0, 0, 4, 5), (0, 1), names, 1)).splitlines()
    assert two[0] == "Game over after 1 round: You and Sara win with 0.", two


def test_safe_text_keeps_words_and_drops_every_control() -> None:
    assert safe("Sara\x1b[2J\x07!") == "Sara!"
    assert safe("a\nb\tc  d") == "a b c d"
    assert safe("\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\") == "link"
    assert safe("x" * 300, 24) == "x" * 24
    assert safe("R\u202eTL\u200b") == "RTL"


def test_a_lost_connection_comes_first_in_the_toolbar() -> None:
    bar = text(toolbar_fragments(_view(turn=1), LOOK, note="connection lost: reconnecting..."))
    assert bar.startswith(" connection lost: reconnecting...   Sara's turn (taking a card)")


def _engine_view(hand: str) -> View:
    options = options_to_proto(dataclasses.asdict(Options(players=3)))
    return view_from_proto(_view(hand=[c + 1 for c in parse_cards(hand)], options=options))


def test_a_hint_without_an_opening_says_what_the_hand_lacks() -> None:
    view = _engine_view("7h 8h 9h 2c 5d Kc")
    analysis = game_pb2.Analysis(points_left=10)
    said = lines(hint_lines(analysis, view, LOOK))
    assert "No opening yet: you have a clean run (7♥ 8♥ 9♥) but no clean set." in said
    # The run as the hand holds it, not its first three cards (the arrangement above it
    # shows all four).
    said = lines(hint_lines(analysis, _engine_view("5h 6h 7h 8h 2c 5d Kc"), LOOK))
    assert "No opening yet: you have a clean run (5♥ 6♥ 7♥ 8♥) but no clean set." in said
    view = _engine_view("2c 5d Kc")
    said = lines(hint_lines(analysis, view, LOOK))
    assert "No opening yet: you have neither a clean set nor a clean run." in said
    # A set and a run that share a card (2♠) make no opening: the hint says so, not "neither".
    view = _engine_view("2c 2d 2s As 3s 4s 9h")
    said = lines(hint_lines(analysis, view, LOOK))
    assert not any("neither" in line for line in said), said
    assert any("are there, but they share 2♠: you hold only one" in line for line in said), said
    # Apart, with no card left over to discard (a hand of six).
    view = _engine_view("2c 2d 2h 4s 5s 6s")
    said = lines(hint_lines(analysis, view, LOOK))
    assert any("laying both leaves no card to discard" in line for line in said), said


def test_a_portuguese_hint_names_every_set_that_waits_for_a_run() -> None:
    """Three sets and no clean run: the hint named the first set only."""
    options = options_to_proto(dataclasses.asdict(Options(players=2)))

    def said(hand: str) -> list[str]:
        proto = _view(
            variant=game_pb2.VARIANT_PORTUGUESE,
            hand=[c + 1 for c in parse_cards(hand)],
            options=options,
            melds=[],
        )
        return lines(hint_lines(game_pb2.Analysis(points_left=80), view_from_proto(proto), LOOK))

    three = said("4c 4d 4s Kd Kh Ks 9c 9d 9h 2c 7d Jh Qs")
    assert any(
        "Your sets 4♣ 4♦ 4♠, 9♣ 9♦ 9♥ and K♦ K♥ K♠ count only beside a clean run" in line
        for line in three
    ), three
    one = said("4c 4d 4s 2c 7d Jh Qs 8h 10c 6s 3d 5h Kc")
    assert any("Your set 4♣ 4♦ 4♠ counts only beside a clean run" in line for line in one), one


def test_a_hint_of_a_finish_says_which_one_card_may_be_kept() -> None:
    """Any one of the finish's discards is the card kept: "but one ... keeping 5♣ or 9♣",
    never two cards named as if both were kept."""
    view = _engine_view("5c 7h 8h 9h 9c Kd Kc Ks")
    two = game_pb2.Analysis(finish_discards=[c + 1 for c in parse_cards("5c 9c")])
    said = lines(hint_lines(two, view, LOOK))
    assert any("but one fit in melds (keeping 5♣ or 9♣)" in line for line in said), said
    three = game_pb2.Analysis(finish_discards=[c + 1 for c in parse_cards("5c 9c Kd")])
    said = lines(hint_lines(three, view, LOOK))
    assert any("(keeping 5♣, 9♣ or K♦)" in line for line in said), said
    # After the draw, on the seat's turn: which of the hint's parts are lays, said plainly.
    drawn = _engine_view("5c 7h 8h 9h 9c Kd Kc Ks 2d")
    drawn = dataclasses.replace(drawn, phase=Phase.PLAY)
    said = " ".join(lines(hint_lines(two, drawn, LOOK)))
    assert (
        "You can lay everything but one card, keeping 5♣ or 9♣. The arrangement above only "
        "counts points; the plays below are lays the rules accept."
    ) in said, said


def test_a_simple_hint_says_why_melds_of_all_but_one_card_are_no_finish() -> None:
    """Simple: every card but one in melds, but no clean set among them: the hint showed the
    arrangement and said nothing, and a player took it for a finish (the lay is refused)."""
    options = options_to_proto(dataclasses.asdict(Options(players=2)))

    def said(hand: str, left: str) -> str:
        proto = _view(
            variant=game_pb2.VARIANT_SIMPLE,
            hand=[c + 1 for c in parse_cards(hand)],
            options=options,
            melds=[],
        )
        analysis = game_pb2.Analysis(left=[c + 1 for c in parse_cards(left)], points_left=5)
        return " ".join(lines(hint_lines(analysis, view_from_proto(proto), LOOK)))

    runs_only = said("Ac 2c 3c 4d 5d 6d 7h 8h 9h 10s Js Qs Ks 5c", "5c")
    assert "a finish needs a clean set among them (three or four of one rank" in runs_only, (
        runs_only
    )
    sets_only = said("4c 4d 4s Kd Kh Ks 9c 9d 9h 2c 2d 2h 7s", "7s")
    assert "a finish needs a clean run among them (three in a row" in sets_only, sets_only
    # Both there (a set and a run): no word of what is missing.
    both = said("4c 4d 4s 5h 6h 7h 9c 9d 9h 2c 2d 2h 7s", "7s")
    assert "a finish needs" not in both, both


def test_a_hint_says_which_play_is_a_rami_sec() -> None:
    """Tallage, nobody has laid this round: a play that lays every card but one is a Rami sec
    (everyone else pays 200), and the hint says so beside it; once someone has laid, not."""
    hand = "Ks Kd Kh Qs Js 10s 9s 8s 2c 3c 4c 7d 7h 7c 9d"
    players = list(_view().players)
    for p in players:
        p.opened = False
    fresh = dict(
        phase=game_pb2.PHASE_PLAY,
        hand=[c + 1 for c in parse_cards(hand)],
        drawn=C("9d") + 1,
        melds=[],
        bar=0,
        players=players,
        options=options_to_proto(dataclasses.asdict(Options(players=3))),
        draw_sources=[],
        can_lay=True,
    )
    view = view_from_proto(_view(**fresh))
    analysis = game_pb2.Analysis(points_left=9)
    said = lines(hint_lines(analysis, view, LOOK))
    sec = [i for i, line in enumerate(said) if "a Rami sec: everyone else pays 200" in line]
    assert len(sec) == 1, said
    # Said on the line after the play's, which holds the command alone, to be copied as it
    # is (pasted with its note, the note's words were taken for cards).
    assert said[sec[0] - 1].startswith("  you can: lay "), said
    assert not any("you can:" in line and "(" in line for line in said), said
    players[1].opened = True
    laid = [game_pb2.TableMeld(number=1, owner=1, meld=_view().melds[0].meld)]
    later = view_from_proto(_view(**{**fresh, "players": players, "melds": laid}))
    said = lines(hint_lines(analysis, later, LOOK))
    plays = [line for line in said if "you can:" in line]
    assert plays and not any("everyone else pays 200" in line for line in said), said


def test_a_hint_says_a_finish_by_another_costs_the_whole_hand_where_it_does() -> None:
    # Tallage and simple: a player who goes out makes the others pay for every card they
    # hold, melds in hand included; the points left over are not what is at stake.
    view = _engine_view("7h 8h 9h 2c 5d Kc")
    left = [c + 1 for c in parse_cards("2c 5d Kc")]
    analysis = game_pb2.Analysis(left=left, points_left=17)
    first = lines(hint_lines(analysis, view, LOOK))[0]
    assert first.endswith(
        "left over: 2♣ 5♦ K♣ (17 points). Another player going out now would cost you every "
        "card you hold: 41 points."
    ), first
    # Every card in melds: the melds in the hand pay all the same.
    melded = game_pb2.Analysis(points_left=0)
    first = lines(hint_lines(melded, view, LOOK))[0]
    assert first.endswith(
        "nothing left over. Another player going out now would cost you every card you hold: "
        "41 points."
    ), first
    # After the draw, nobody goes out before the discard: the card thrown is not paid.
    drawn = dataclasses.replace(view, phase=Phase.PLAY)
    first = lines(hint_lines(analysis, drawn, LOOK))[0]
    assert first.endswith(
        "(17 points). Once you have discarded, another player going out would cost you every "
        "card you still hold: 41 points less the card you throw."
    ), first
    # One card left after the draw: throwing it goes out, and nobody can make it pay.
    last = dataclasses.replace(view, phase=Phase.PLAY, hand=(C("Kc"),))
    first = lines(hint_lines(game_pb2.Analysis(points_left=10), last, LOOK))[0]
    assert "would cost you" not in first, first
    assert first.endswith("Throw your last card to go out."), first
    # Nobody has laid yet: a whole hand laid at once is a Rami sec.
    view = dataclasses.replace(view, melds=())
    first = lines(hint_lines(analysis, view, LOOK))[0]
    assert first.endswith(
        "every card you hold: 41 points (200 if they lay their whole hand while nobody has "
        "laid: a Rami sec)."
    ), first


def _hint_with_no_opening(hand: str, top: str, **view: object) -> list[str]:
    """The hint's lines for ``hand`` with ``top`` on the pile, its analysis finding no
    opening."""
    seen = dataclasses.replace(_engine_view(hand), discard_top=C(top), **view)  # type: ignore[arg-type]
    return lines(hint_lines(game_pb2.Analysis(points_left=10, opening_value=0), seen, LOOK))


def test_a_hint_short_of_the_opening_says_when_the_discard_would_open() -> None:
    view = _engine_view("Kc Kd Kh Qd Qh Qs 10c Jc 2d 5s")  # 9♣ on the pile; 80 to open
    analysis = game_pb2.Analysis(points_left=10, opening_value=60)
    said = lines(hint_lines(analysis, view, LOOK))
    assert (
        "Your best opening is worth 60: short of 80 by 20 points, but taking 9♣ from the "
        "discard pile lets you lay (below)." in said
    ), said
    assert any(line.startswith("  you can: draw discard; lay ") for line in said), said
    view = _engine_view("Kc Kd Kh Qd Qh Qs 10c 2d 5s")  # 9♣ opens nothing
    said = lines(hint_lines(analysis, view, LOOK))
    assert "Your best opening is worth 60: short of 80 by 20 points." in said, said
    # No clean run without the discard (so no opening at all), one with it: the hint says
    # both, not only what the hand lacks.
    said = _hint_with_no_opening("8d 8h 8s 10c 10d 10h Qd Kd 2c 5s 7h", "Jd")
    assert (
        "No opening yet: you have a clean set (8♦ 8♥ 8♠) but no clean run; taking J♦ from "
        "the discard pile lets you open (below)." in said
    ), said


def test_a_hint_says_the_discard_lets_the_hand_go_out_not_open_when_only_a_finish_takes_it() -> (
    None
):
    """Tallage: a whole-hand lay needs no opening's points. Where the card on the pile makes
    only such a finish (its melds short of the bar), the hint says it lets the hand go out,
    not open."""
    hand = "2c 2h 2s 4c 4d 4s Jc Jh Js JK Ah 2h 4h"  # 3♥ on the pile: all but one laid
    said = _hint_with_no_opening(hand, "3h", bar=150)
    assert (
        "No opening yet: you have a clean set (2♣ 2♥ 2♠) but no clean run; taking 3♥ from "
        "the discard pile lets you go out, laying your whole hand (below)." in said
    ), said
    assert any(line.startswith("  you can: draw discard; lay ") for line in said), said


def test_the_pile_follows_throws_takes_a_rebuilt_stock_and_the_view() -> None:
    pile = Pile()
    pile.apply(ev.RoundStarted(1, 0, "", C("3s"), 1))
    pile.apply(ev.Discarded(1, C("9c")))
    pile.apply(ev.Drew(0, "discard", C("9c")))
    pile.apply(ev.Discarded(0, C("Kh")))
    names = ["You", "Sara"]
    assert text(pile.line(names, LOOK)) == "K♥ You · 3♠"
    # 2 cards on the pile, 3 throws listed: the one taken is listed where it was thrown, and
    # the heading says so.
    assert lines(pile.lines(names, LOOK, 2)) == [
        "The discard pile (2 cards, and 1 taken from it), the newest first",
        "  K♥  discarded by You",
        "  9♣  discarded by Sara, taken by You",
        "  3♠  turned up",
    ]
    pile.apply(ev.StockRebuilt(1, 40))
    assert text(pile.line(names, LOOK)) == "K♥ You"
    pile.sync(C("Kh"))  # agrees: nothing changes
    assert text(pile.line(names, LOOK)) == "K♥ You"
    pile.sync(C("2d"))  # a view that disagrees starts the pile again from its top
    assert text(pile.line(names, LOOK)) == "2♦"


def test_a_declarations_card_lies_face_down_on_the_pile_and_is_counted() -> None:
    """Portuguese: a complete declaration puts its 14th card face down on the pile, which the
    server counts; the listing said "19 cards" and showed 18 rows, with none of the card."""
    pile = Pile()
    pile.apply(ev.RoundStarted(1, 0, "", C("3s"), 1))
    pile.apply(ev.Discarded(1, C("9c")))
    pile.apply(ev.Drew(0, "discard", C("9c")))
    pile.apply(ev.Declared(0, (), True, None, 1))
    names = ["You", "Sara"]
    assert lines(pile.lines(names, LOOK, 2)) == [
        "The discard pile (2 cards, and 1 taken from it), the newest first",
        "  --  face down: the card You declared with",
        "  9♣  discarded by Sara, taken by You",
        "  3♠  turned up",
    ]
    assert text(pile.line(names, LOOK, size=2)) == "face down · 3♠"
    ascii_look = Look(color=False, ascii=True)
    assert (
        lines(pile.lines(names, ascii_look, 2))[1] == "  --  face down: the card You declared with"
    )
    # A false declaration's card is an ordinary discard, face up.
    pile.apply(ev.RoundStarted(2, 1, "", C("4h"), 1))
    pile.apply(ev.Declared(1, (), False, C("Kd")))
    assert lines(pile.lines(names, LOOK, 2))[1] == "  K♦  discarded by Sara"


def test_a_pile_first_seen_mid_round_does_not_call_its_bottom_card_turned_up() -> None:
    pile = Pile()
    pile.sync(C("8d"))  # joined (or came back) with 20 cards on the pile, 8♦ on top
    pile.apply(ev.Discarded(1, C("10s")))
    pile.apply(ev.Discarded(2, C("8c")))
    names = ["You", "Sara", "Bo"]
    assert text(pile.line(names, LOOK, size=22)) == "8♣ Bo · 10♠ Sara · 8♦ · … 19 more (pile)"
    assert lines(pile.lines(names, LOOK, 22)) == [
        "The discard pile (22 cards), the newest first",
        "  8♣  discarded by Bo",
        "  10♠ discarded by Sara",
        "  8♦  on top when you joined",
        "  … and 19 cards under it, from before you joined",
    ]
    said = lines(pile.lines(names, LOOK, 22, 4))
    assert said[-1] == "  … and 20 older throws (no room in this window)", said


def test_a_pile_longer_than_the_throws_kept_says_how_many_more_lie_under() -> None:
    pile = Pile()
    pile.apply(ev.RoundStarted(1, 0, "", C("3s"), 1))
    for i in range(35):
        pile.apply(ev.Discarded(i % 2, C("9c" if i % 2 else "Kh")))
    said = lines(pile.lines(["You", "Sara"], LOOK, 36))
    assert len(said) == 32 and said[-1] == "  … and 6 older cards under them", said
    said = lines(pile.lines(["You", "Sara"], LOOK, 36, 8))
    assert said[-1] == "  … and 30 older throws (no room in this window)", said


def test_a_pile_followed_from_mid_round_says_how_many_older_cards_lie_under() -> None:
    """Taking a seat back reads the table's recent past (QUIET_HISTORY updates): when that
    starts after the round's deal or the stock's last rebuild, the pile's oldest cards were
    never followed. The listing said nothing of them (24 cards, 23 rows)."""
    pile = Pile()
    for i in range(5):  # no deal, no rebuild: the first events read are discards
        pile.apply(ev.Discarded(i % 2, C("9c" if i % 2 else "Kh")))
    said = lines(pile.lines(["You", "Sara"], LOOK, 7))
    assert said[-1] == "  … and 2 older cards under them", said
    # Followed from the deal, the same counts say nothing more (the pile is known whole).
    whole = Pile()
    whole.apply(ev.RoundStarted(1, 0, "", C("3s"), 1))
    for i in range(5):
        whole.apply(ev.Discarded(i % 2, C("9c" if i % 2 else "Kh")))
    assert lines(whole.lines(["You", "Sara"], LOOK, 6))[-1] == "  3♠  turned up"


def test_an_empty_hand_after_going_out_says_so() -> None:
    view = _view(phase=game_pb2.PHASE_ROUND_OVER, hand=[], melds=[])
    panel = lines([panel_fragments(view, LOOK)])
    assert "Hand     no cards left" in panel[0].split("\n"), panel


def test_the_toolbar_and_the_table_mark_the_dealer() -> None:
    view = _view(dealer=1)
    bar = text(toolbar_fragments(view, LOOK, width=120)).split("\n")[2]
    assert "Sara 11 cards, 34 pts, opened, dealer" in bar
    assert "Sara 11c 34p open D" in text(toolbar_fragments(view, LOOK, width=60, rows=15))
    table = lines(table_lines(view, LOOK))
    assert any(t.startswith("    Sara") and t.endswith("· dealer") for t in table), table


def test_the_score_sheet_has_a_row_per_round_and_the_totals() -> None:
    results = [
        ev.RoundResult(1, "rami", 1, (47, 0, 6), (47, 0, 6)),
        ev.RoundResult(2, "void", None, (0, 0, 0), (47, 0, 6)),
        ev.RoundResult(3, "declare", 0, (0, 20, 40), (47, 20, 46), 2),
    ]
    sheet = lines(score_sheet(results, ["You", "Sara", "Strong bot 3"]))
    assert sheet[0] == "Scores after 3 rounds"
    assert sheet[1].split() == ["round", "You", "Sara", "Strong", "bot", "3"]
    assert sheet[2].split() == ["1", "47", "0", "6", "Sara", "went", "out"]
    assert sheet[3].split() == ["2", "0", "0", "0", "void"]
    assert sheet[4].split() == ["3", "0", "20", "40", "You", "declared", "(x2)"]
    assert sheet[5].split() == ["total", "47", "20", "46"]


def test_the_score_sheet_of_six_fits_a_narrow_window() -> None:
    """Six players at 60 columns: each row wrapped, and the columns no longer stood under
    their names. The names are cut to fit, and how a round ended goes on its own line."""
    from prompt_toolkit.utils import get_cwidth

    names = ["You", "Greedy bot 2", "Strong bot 3", "Expert bot 4", "Greedy bot 5", "山田太郎"]
    results = [
        ev.RoundResult(1, "rami", 1, (47, 0, 6, 120, 8, 33), (47, 0, 6, 120, 8, 33)),
        ev.RoundResult(2, "void", None, (0,) * 6, (47, 0, 6, 120, 8, 33)),
    ]
    sheet = lines(score_sheet(results, names, width=60))
    assert all(get_cwidth(line) < 60 for line in sheet), sheet
    head, first, note, void, void_note, total = sheet[1:]
    assert head.split()[:3] == ["round", "You", "Greedy"], head
    ends = {get_cwidth(line) for line in (head, first, void, total)}
    assert len(ends) == 1, sheet  # every column ends under its name
    assert first.split() == ["1", "47", "0", "6", "120", "8", "33"]
    assert note.strip() == "Greedy bot 2 went out"
    assert void.split() == ["2", "0", "0", "0", "0", "0", "0"] and void_note.strip() == "void"
    # Wide enough, as before: whole names, the ending on the round's row.
    wide = lines(score_sheet(results, names, width=120))
    assert "Greedy bot 2 went out" in wide[2] and "Expert bot 4" in wide[1]


def test_a_tallage_discard_the_view_does_not_offer_is_refused_with_why() -> None:
    """The view offers tallage's discard only when a lay this turn can take it: a `draw
    discard` it does not offer is refused at once, saying so, not staged."""
    from rami.client.checks import no_discard

    view = _view(
        variant=game_pb2.VARIANT_TALLAGE,
        hand=[c + 1 for c in parse_cards("2c 5d Kc 9h")],
        discard_top=parse_cards("8c")[0] + 1,
        draw_sources=[game_pb2.DRAW_SOURCE_STOCK],
        first_circuit=False,
    )
    why = no_discard(view)
    # Why, in the numbers the toolbar gives: the bar is at 79, and Ana has not opened.
    assert why == (
        "it is taken only to be laid at once, and no opening of 80+ this turn uses it; draw stock"
    )
    opened = game_pb2.View()
    opened.CopyFrom(view)
    opened.players[0].opened = True
    assert "no lay of yours this turn uses it" in no_discard(opened)
    # The first circuit is the round's (each player's first turn), not the table's.
    first = game_pb2.View()
    first.CopyFrom(view)
    first.first_circuit = True
    assert no_discard(first) == (
        "nobody takes the discard during the first circuit of the round (each player's first turn)"
    )
    # Two cards and a discard that makes a set of three: the lay would leave none to discard.
    pair = game_pb2.View()
    pair.CopyFrom(opened)
    del pair.hand[:]
    pair.hand.extend(c + 1 for c in parse_cards("8d 8h"))
    assert no_discard(pair) == (
        "it is taken only to be laid at once, and no lay of yours this turn uses it (a lay"
        " leaves you a card to discard, and a meld of it and your two cards would not);"
        " draw stock"
    )


def test_the_toolbar_says_the_game_also_ends_at_the_round_cap() -> None:
    options = game_pb2.Options(players=3, opening=71, target=201, round_cap=3)
    facts = text(toolbar_fragments(_view(options=options), LOOK, width=140)).split("\n")[1]
    assert "game ends at 201 or after 3 rounds" in facts, facts
    small = text(toolbar_fragments(_view(options=options), LOOK, width=60, rows=15))
    assert "to 201 or 3 rounds" in small, small
    assert "game ends at 201 or after 3 rounds" in text(
        table_lines(_view(options=options), LOOK)[1]
    )
    one = game_pb2.Options(players=3, opening=71, target=201, round_cap=1)
    small = text(toolbar_fragments(_view(options=one), LOOK, width=60, rows=15))
    assert "to 201 or 1 round " in small or small.rstrip().endswith("to 201 or 1 round"), small


def test_a_tallage_draw_that_offers_only_the_stock_says_why() -> None:
    stock_only = dict(draw_sources=[game_pb2.DRAW_SOURCE_STOCK], first_circuit=False)
    turn = text(toolbar_fragments(_view(**stock_only), LOOK, width=200)).split("\n")[0]
    assert turn == " Your turn: draw stock (9♣ only if laid at once: no opening of 80+ uses it)"
    opened = _view(**stock_only)
    opened.players[0].opened = True
    turn = text(toolbar_fragments(opened, LOOK, width=200)).split("\n")[0]
    assert turn == " Your turn: draw stock (9♣ only if laid at once: no lay of yours uses it)"
    one = _view(hand=[C("Kd") + 1], **stock_only)
    turn = text(toolbar_fragments(one, LOOK, width=200)).split("\n")[0]
    assert turn == " Your turn: draw stock (holding one card, you draw from the stock)"


def test_a_long_pile_line_shows_the_newest_cards_and_how_many_more() -> None:
    pile = Pile()
    pile.apply(ev.RoundStarted(1, 0, "", C("3s"), 1))
    for seat, code in [(1, "9c"), (2, "Kh"), (0, "4d"), (1, "Jc"), (2, "2s"), (0, "7h")]:
        pile.apply(ev.Discarded(seat, C(code)))
    view = _view(phase=game_pb2.PHASE_PLAY, discard_size=12)
    view.players[1].name = "Sara Strongwoman"
    panel = text(panel_fragments(view, LOOK, width=80, rows=24, pile=pile)).split("\n")
    (line,) = [p for p in panel if p.startswith("Pile")]
    assert len(line) < 80, line
    assert line.startswith("Pile     7♥ You · 2♠ Strong bot 3 · "), line
    hidden = int(line.split("… ")[1].split()[0])
    shown = line.count(" · ")  # the cards shown, each before a separator
    assert hidden == 12 - shown and line.endswith(f"… {hidden} more (pile)"), line
    # Room for every card followed: all seven (the turned-up card last), then how many more
    # lie under them (a card hidden behind a longer "1 more" was a card that fitted).
    wide = text(panel_fragments(view, LOOK, width=200, rows=24, pile=pile)).split("\n")
    (line,) = [p for p in wide if p.startswith("Pile")]
    assert line.count("·") == 7 and line.endswith("3♠ · … 5 more (pile)"), line
    size7 = _view(phase=game_pb2.PHASE_PLAY, discard_size=7)
    whole = text(panel_fragments(size7, LOOK, width=200, rows=24, pile=pile)).split("\n")
    (line,) = [p for p in whole if p.startswith("Pile")]
    assert "more" not in line and line.endswith("9♣ Sara · 3♠"), line
    assert text(pile.line(["You", "Sara", "Bo"], ASCII, 40, 12)) == (
        "7h You - 2s Bo - ... 10 more (pile)"
    )


def test_a_long_line_breaks_between_words_keeping_its_styles() -> None:
    line = [("", "  Sara laid "), ("class:card.red", "9♥"), ("", ", "), ("class:x", "x" * 30)]
    rows = [text(r) for r in wrapped(line, 16)]
    assert rows == ["  Sara laid 9♥,", "    xxxxxxxxxxxx", "    xxxxxxxxxxxx", "    xxxxxx"]
    assert ("class:card.red", "9♥") in wrapped(line, 16)[0]
    assert wrapped(line, 60) == [line]


def test_help_of_a_mistyped_command_names_the_one_meant() -> None:
    from rami.client.helptext import help_lines
    from rami.engine import get_variant

    with pytest.raises(
        ValueError, match=r"^there is no command 'lya': did you mean lay \(help lay\)\?$"
    ):
        help_lines("lya", "playing", get_variant("tallage"), 80)
    with pytest.raises(ValueError, match=r"^there is no command 'zzz'; help lists them$"):
        help_lines("zzz", "playing", get_variant("tallage"), 80)


def test_help_and_the_pile_fit_the_rows_they_have() -> None:
    from rami.client.helptext import help_lines
    from rami.engine import get_variant

    tallage = get_variant("tallage")
    full = lines(help_lines("", "playing", tallage, 80))
    assert "  sort [suit|rank]                   sort your hand by suit or by rank (F2" in full
    usages = lines(help_lines("", "playing", tallage, 80, 12))
    assert len(usages) <= 12 and usages[0] == "Commands at this table, during the game", usages
    assert any("draw stock|discard" in u and "cancel" in u for u in usages), usages
    # The list is what applies where the person is: no rematch during the game, no move once
    # it is over.
    assert not any(u.lstrip().startswith("rematch") for u in full), full
    over = lines(help_lines("", "over", tallage, 80))
    assert over[0] == "Commands at this table, its game over", over
    assert any(u.lstrip().startswith("rematch") for u in over), over
    assert not any(u.lstrip().startswith(("draw", "discard", "lay")) for u in over), over
    assert "Tab completes commands; F1 help, F2 sorts the hand, F3 shows" in " ".join(over)
    # The footer is one line, which the printer breaks to the window's width, and again when
    # the window is resized (broken here to 80 columns, it stayed so in a wider window).
    footer = "Tab completes commands; F1 help, F2 sorts the hand, F3 shows the table."
    assert lines(help_lines("", "over", tallage, 40))[-1] == f"{footer} help COMMAND explains one."
    names = lines(help_lines("", "playing", tallage, 60, 6))
    assert len(names) <= 6 and names[1].split()[:3] == ["draw", "take", "undo"], names
    assert names[-1].endswith("help COMMAND explains one.")
    pile = Pile()
    pile.apply(ev.RoundStarted(1, 0, "", C("3s"), 1))
    for code in ["9c", "Kh", "4d", "Jc", "2s", "7h"]:
        pile.apply(ev.Discarded(1, C(code)))
    said = lines(pile.lines(["You", "Sara"], LOOK, 7, 5))
    assert said == [
        "The discard pile (7 cards), the newest first",
        "  7♥  discarded by Sara",
        "  2♠  discarded by Sara",
        "  J♣  discarded by Sara",
        "  … and 4 older throws (no room in this window)",
    ]
    assert len(lines(pile.lines(["You", "Sara"], LOOK, 7, 8))) == 8


def test_help_printed_in_a_narrow_window_is_broken_anew_when_it_widens() -> None:
    """``help undo`` at 60 columns, the window then made 80 wide: drawn again, its rows are
    those of ``help undo`` typed at 80 columns (not the 60-column rows broken once more)."""
    from rami.client.helptext import help_lines
    from rami.engine import get_variant

    tallage = get_variant("tallage")

    def rows_of(printer: Printer, columns: int) -> list[str]:
        return [text(r) for f, hang in printer.recent for r in printer._rows(f, columns, hang)]

    narrow = Printer(LOOK, columns=lambda: 60)
    narrow.lines(help_lines("undo", "playing", tallage, 60), hang=0)
    wide = Printer(LOOK, columns=lambda: 80)
    wide.lines(help_lines("undo", "playing", tallage, 80), hang=0)
    assert rows_of(narrow, 80) == rows_of(wide, 80)
    said = rows_of(narrow, 60)
    assert len(said) > 3 and all(len(r) <= 59 for r in said), said
    assert all(r.startswith("  ") and not r.startswith("   ") for r in said[1:]), said


def test_the_last_rounds_line_keeps_the_largest_payments_when_cut() -> None:
    """At 80 columns with four long names the payments do not all fit: the largest are
    shown first, so that the cut drops the smallest, never the one that matters most."""
    last = game_pb2.RoundResult(
        round=1,
        ending=game_pb2.ROUND_ENDING_RAMI,
        winner=1,
        points=[54, 0, 117, 9],
        totals=[54, 0, 117, 9],
    )
    view = _view(phase=game_pb2.PHASE_DRAW, first_circuit=True, results=[last])
    view.players.append(game_pb2.PlayerState(seat=3, name="Strong bot 4", hand_size=14))
    view.players[1].name = "Strong bot 2"
    panel = text(panel_fragments(view, LOOK, width=72, rows=24)).split("\n")
    (line,) = [p for p in panel if p.startswith("Round 1")]
    assert "Strong bot 3 117" in line and "You 54" in line, line
    assert line.index("117") < line.index("You 54"), line
    assert len(line) < 72 and line.endswith("You 54 · …"), line  # no payment cut in two
    # What was cut is on the score sheet, and the line says so where it has room (as the
    # pile's says "pile"): a new player at 80 columns with four players found the line cut,
    # and no way told.
    panel = text(panel_fragments(view, LOOK, width=80, rows=24)).split("\n")
    (line,) = [p for p in panel if p.startswith("Round 1")]
    assert line.endswith("You 54 · … (scores)") and len(line) < 80, line


def test_a_meld_in_brackets_is_not_broken_between_rows() -> None:
    """Found by a new player's try at 80 columns: "melds kept: [...] [10♠" then "J♠ JK(Q♠)]"
    on the next row."""
    line = [("", "  melds kept: [4♣ 5♣ 6♣] [10♠ J♠ JK(Q♠)]")]
    rows = [text(r) for r in wrapped(line, 34)]
    assert rows == ["  melds kept: [4♣ 5♣ 6♣]", "    [10♠ J♠ JK(Q♠)]"]
    # A meld wider than a row is broken all the same, between its cards.
    assert [text(r) for r in wrapped([("", "[10♠ J♠ Q♠ K♠]")], 8)] == ["[10♠ J♠", "  Q♠ K♠]"]
    # ...each row as full as it may be: this one ends on a space inside the brackets.
    run = "[2♠ 3♠ 4♠ 5♠ 6♠ 7♠ 8♠]"
    assert [text(r) for r in wrapped([("", run)], 12)] == ["[2♠ 3♠ 4♠ 5♠", "  6♠ 7♠ 8♠]"]
    # A bracket that never closes (a chat line) groups nothing.
    chat = "Ana: hello [this is a long chat line"
    assert [text(r) for r in wrapped([("", chat)], 20)] == [
        "Ana: hello [this is",
        "  a long chat line",
    ]


def test_a_line_with_newlines_or_wide_characters_still_fits() -> None:
    rows = [text(r) for r in wrapped([("", "ab\ncd ef gh ij")], 8)]
    assert rows == ["ab", "cd ef gh", "  ij"]
    rows = [text(r) for r in wrapped([("", "漢字漢字")], 3)]
    assert rows == ["漢", " 字", " 漢", " 字"]  # never stuck on a character wider than the row


def test_the_last_rounds_payments_stay_in_the_panel_through_the_first_circuit() -> None:
    """At 80x24 with 4 players the round's payments scroll away before your first turn of the
    next round: the panel keeps them while every seat plays its first turn."""
    last = game_pb2.RoundResult(
        round=1, ending=game_pb2.ROUND_ENDING_RAMI, winner=1, points=[47, 0, 6], totals=[47, 0, 6]
    )
    view = _view(phase=game_pb2.PHASE_DRAW, first_circuit=True, results=[last])
    panel = text(panel_fragments(view, LOOK, width=80, rows=24)).split("\n")
    (line,) = [p for p in panel if p.startswith("Round 1")]
    # Who went out paid nothing: said once ("Sara went out"), the room is for who paid.
    assert line == "Round 1  Sara went out · paid: You 47 · Strong bot 3 6", line
    assert len(line) < 80
    # A declaration is said as one (portuguese).
    declared = game_pb2.RoundResult(
        round=1,
        ending=game_pb2.ROUND_ENDING_DECLARE,
        winner=1,
        multiplier=2,
        points=[40, 0, 12],
        totals=[40, 0, 12],
    )
    view2 = _view(phase=game_pb2.PHASE_DRAW, first_circuit=True, results=[declared])
    panel2 = text(panel_fragments(view2, LOOK, width=80, rows=24)).split("\n")
    (line2,) = [p for p in panel2 if p.startswith("Round 1")]
    assert line2.startswith("Round 1  Sara declared (x2) · paid: You 40"), line2
    # Gone once the circuit is over, and never in a small window.
    later = _view(phase=game_pb2.PHASE_DRAW, first_circuit=False, results=[last])
    assert not any(p.startswith("Round") for p in text(panel_fragments(later, LOOK)).split("\n"))
    tiny = text(panel_fragments(view, LOOK, width=60, rows=15)).split("\n")
    assert not any(p.startswith("Round") for p in tiny)


def test_wide_names_keep_the_score_columns_in_line() -> None:
    """A name in double-width characters (CJK) takes two cells a character: the columns after
    it are lined up by the cells the terminal shows, not by characters."""
    from prompt_toolkit.utils import get_cwidth

    names = ["You", "山田太郎", "Strong bot 3"]
    results = [ev.RoundResult(1, "rami", 1, (47, 0, 6), (47, 0, 6))]

    def cells_before(line: str, word: str) -> int:
        return get_cwidth(line[: line.index(word)])

    sheet = lines(score_sheet(results, names))
    row = sheet[2][: sheet[2].index("  山田太郎 went out")]  # without how the round ended
    ends = [get_cwidth(line) for line in (sheet[1], row, sheet[3])]
    assert len(set(ends)) == 1, sheet  # every column ends where its heading does
    table = text(round_table(results[0], names, LOOK)).splitlines()
    assert len({cells_before(line, "  ") for line in table}) == 1  # the indent
    paid = [cells_before(line, str(results[0].points[s])) for s, line in enumerate(table[1:])]
    heading = cells_before(table[0], "paid") + len("paid")
    assert all(
        cells_before(line, f"{p:>5}") + 5 == heading
        for line, p in zip(table[1:], results[0].points, strict=True)
    ), (table, paid)
    end = text(game_table((47, 0, 6), (1,), names, 1)).splitlines()[1:]
    assert len({get_cwidth(line) for line in end}) == 1, end


def test_a_wide_name_keeps_the_last_rounds_line_within_the_window() -> None:
    from prompt_toolkit.utils import get_cwidth

    from rami.client.panel import panel_fragments

    view = _view()
    view.first_circuit = True  # the round just played is shown while the next one starts
    view.players[1].name = "山田太郎と申します長い名前のプレイヤーです"  # 44 cells
    result = view.results.add(round=view.round - 1, ending=game_pb2.ROUND_ENDING_RAMI, winner=1)
    result.points.extend([47, 0, 6])
    result.totals.extend([47, 0, 6])
    panel = text(panel_fragments(view, LOOK, width=80))
    line = next(t for t in panel.split("\n") if t.startswith("Round "))
    assert get_cwidth(line) < 80 and line.endswith("…"), line


def test_a_wide_name_keeps_the_toolbar_within_the_window() -> None:
    from prompt_toolkit.utils import get_cwidth

    view = _view()
    view.players[1].name = "山田太郎と申します長い名前のプレイヤーです"  # 44 cells
    for width, rows in ((80, 24), (60, 15)):
        bar = text(toolbar_fragments(view, LOOK, width=width, rows=rows))
        assert all(get_cwidth(line) < width for line in bar.split("\n")), bar
        assert "You 14 cards, 12 pts" in bar or "You 14c 12p" in bar, bar


def test_a_wide_name_keeps_the_seat_facts_of_the_table_in_line() -> None:
    from prompt_toolkit.utils import get_cwidth

    view = _view()
    for name in ("山田太郎", "山田太郎と申します長い名前のプレイヤーです"):  # 44 cells
        view.players[1].name = name
        table = lines(table_lines(view, LOOK))
        rows = [t for t in table if " seat " in t and " cards" in t]
        assert len(rows) == 3 and any(name in t for t in rows), table
        assert len({get_cwidth(t[: t.index(" seat ")]) for t in rows}) == 1, rows


def test_a_player_who_leaves_a_game_under_way_leaves_the_seat_to_the_server() -> None:
    def told(seat: int, **fields: object) -> str:
        return "\n".join(lines(narrate(te.Left(seat), _scene(**fields))))

    assert told(1) == "Sara left the table."  # before the game: the seat is free again
    # During a game the event is the same whether the player left or their connection died
    # (a crash, a closed window): "went away" is true of both, where "You left" told a player
    # coming back after a crash of something they never did.
    assert told(1, in_game=True) == "Sara went away: the server plays the seat until they are back."
    mine = told(0, me=0, in_game=True)
    assert mine == "You went away: the server plays your seat until you take it back."


def test_a_hint_after_the_round_ended_gives_no_advice_for_a_turn() -> None:
    """Once the round is over (or the game), a hint's "draw, then declare" or "lay" cannot be
    followed: it says the round is over, and gives the arrangement alone."""
    view = _engine_view("7h 8h 9h 2c 5d Kc")
    analysis = game_pb2.Analysis(points_left=10, multiplier=1, declare_cards=[3])
    for phase, words in ((Phase.ROUND_OVER, "The round is over"), (Phase.GAME_OVER, "over")):
        said = lines(hint_lines(analysis, dataclasses.replace(view, phase=phase), LOOK))
        assert said[0].startswith("Best arrangement"), said
        assert "going out now" not in said[0], said  # nobody goes out of a round over
        assert any(words in line for line in said[1:]), said
        assert not any("draw" in line or "you can" in line or "turn" in line for line in said), said


def test_a_portuguese_rounds_kept_melds_are_shown_apart() -> None:
    """After a declaration every hand is shown: the melds a hand kept are each in brackets,
    so that two melds side by side never read as one (A♦ 2♦ 3♦ and 4♦ 4♠ JK, not a run
    running into a set)."""
    from rami.engine import VARIANTS as ALL

    hand = tuple(parse_cards("Ad 2d 3d 4d 4s JK 6c 6d 6s 7c 7d 7s 9h"))
    result = ev.RoundResult(1, "declare", 1, (9, 0), (9, 0), hands=(hand, tuple(parse_cards("2c"))))
    table = text(round_table(result, ["You", "Sara"], LOOK, ALL["portuguese"])).splitlines()
    kept = next(line for line in table if "melds kept:" in line)
    assert "[A♦ 2♦ 3♦]" in kept, table
    assert kept.count("[") == kept.count("]") >= 3, table


def test_a_portuguese_hand_without_a_clean_run_says_why_its_sets_pay() -> None:
    """Three sets and no clean run: every card pays (sets count only beside a run). The
    score showed the cards, and a new player could not tell why the sets were paid for."""
    from rami.engine import VARIANTS as ALL

    sets = tuple(parse_cards("4c 9c Kc 4d 9d Kd 2h 3h 5h 4s 9s Ks JK"))
    result = ev.RoundResult(1, "declare", 1, (79, 0), (79, 0), hands=(sets, ()))
    table = text(round_table(result, ["You", "Sara"], LOOK, ALL["portuguese"]))
    assert "(no clean run: its sets pay too)" in table, table
    kept = tuple(parse_cards("Ad 2d 3d 4d 4s JK 6c 6d 6s 7c 7d 7s 9h"))
    result = ev.RoundResult(1, "declare", 1, (9, 0), (9, 0), hands=(kept, ()))
    table = text(round_table(result, ["You", "Sara"], LOOK, ALL["portuguese"]))
    assert "no clean run" not in table, table


def test_a_chained_draw_of_the_discard_counts_its_card_as_held() -> None:
    """``draw discard; take 1 3c; add 1 JK high``, the line hint prints when the discard takes
    a joker back: the card taken from the pile is in the hand the rest of the line plays from
    (typed one command at a time, it was staged first, and went)."""
    from rami.client.checks import cannot
    from rami.client.moves import parse_move
    from rami.client.staging import Stage

    players = list(_view().players)
    players[0].opened = True
    run = game_pb2.Meld(
        kind=game_pb2.MELD_KIND_RUN,
        cards=[c + 1 for c in parse_cards("2c JK 4c 5c")],
        stands_for=[C("3c") + 1],
        jokers_as=[C("3c") + 1],
    )
    view = _view(
        players=players,
        discard_top=C("3c") + 1,
        melds=[game_pb2.TableMeld(number=1, owner=1, meld=run)],
    )
    hand = [c for c in parse_cards("9c 2h Ks JK 10d 10h 4c 5c Qd Qh Qs 7s 8s")]
    view.ClearField("hand")
    view.hand.extend(c + 1 for c in hand)
    tallage = VARIANTS["tallage"]
    check = dict(stage=Stage(), opened_before_turn=True, card_text=LOOK.card_text)
    chained = parse_move("draw", "discard; take 1 3c; add 1 JK high", hand)
    assert cannot(chained, view, tallage, **check) == ""  # type: ignore[arg-type]
    # Without the discard, 3c is not held: said at once, as before.
    alone = parse_move("take", "1 3c", hand)
    assert "You don't hold 3♣" in cannot(alone, view, tallage, **check)  # type: ignore[arg-type]


def test_a_discard_or_declaration_before_the_draw_says_draw_first() -> None:
    """``declare 2s`` (or ``discard 2s``) typed before drawing, the card not held yet (the one
    about to be drawn): the player is told to draw first, not that the card is not held."""
    from rami.client.checks import cannot
    from rami.client.moves import parse_move
    from rami.client.staging import Stage

    hand = parse_cards("3d 4d 5d 7c 8c 9c 10c Ks Kd Kh 9h JK Jh")
    view = _view(
        variant=game_pb2.VARIANT_PORTUGUESE,
        phase=game_pb2.PHASE_DRAW,
        turn=0,
        draw_sources=[game_pb2.DRAW_SOURCE_STOCK, game_pb2.DRAW_SOURCE_DISCARD],
    )
    view.ClearField("hand")
    view.hand.extend(c + 1 for c in hand)
    portuguese = VARIANTS["portuguese"]
    check = dict(stage=Stage(), opened_before_turn=False, card_text=LOOK.card_text)
    for typed, verb in (("declare", "declare"), ("discard", "discard")):
        for word in ("2s", "3d"):  # not held, and held
            said = cannot(parse_move(typed, word, hand), view, portuguese, **check)  # type: ignore[arg-type]
            assert said == (
                f"Draw first: you {verb} after taking a card (draw stock, or draw discard). "
                "Nothing was sent."
            ), said
    # Only the draws the rules offer are named.
    del view.draw_sources[1:]
    said = cannot(parse_move("discard", "3d", hand), view, portuguese, **check)  # type: ignore[arg-type]
    assert said.startswith("Draw first: you discard after taking a card (draw stock). "), said
    # Once drawn, or when it is another's turn, nothing is said here.
    view.phase = game_pb2.PHASE_PLAY
    assert cannot(parse_move("declare", "3d", hand), view, portuguese, **check) == ""  # type: ignore[arg-type]
    view.phase, view.turn = game_pb2.PHASE_DRAW, 1
    assert cannot(parse_move("discard", "3d", hand), view, portuguese, **check) == ""  # type: ignore[arg-type]


def test_drawing_again_is_refused_in_the_same_words_from_either_source() -> None:
    """A second draw in a turn: `draw stock` went to the server and came back "Refused: You
    have already drawn this turn. Nothing was played.", while `draw discard` was said at
    once in other words (a new player's try noticed the two). Both are said at once now."""
    from rami.client.checks import cannot
    from rami.client.moves import parse_move
    from rami.client.staging import Stage

    hand = parse_cards("3d 4d 5d 7c 8c 9c 10c Ks Kd Kh 9h JK Jh 2s")
    view = _view(variant=game_pb2.VARIANT_PORTUGUESE, phase=game_pb2.PHASE_PLAY, turn=0)
    view.ClearField("hand")
    view.hand.extend(c + 1 for c in hand)
    view.drawn = parse_cards("2s")[0] + 1
    check = dict(stage=Stage(), opened_before_turn=False, card_text=LOOK.card_text)
    for source in ("stock", "discard"):
        said = cannot(parse_move("draw", source, hand), view, VARIANTS["portuguese"], **check)  # type: ignore[arg-type]
        assert said == (
            "You can't draw now: you have already drawn this turn. Nothing was staged or sent."
        ), (source, said)


def test_help_of_a_command_the_game_does_not_have_says_why() -> None:
    """``help undo`` in simple told tallage's undo ("draw discard, take 2 5s"), a command
    simple has not (a new player's try): it says why the game has none instead."""
    from rami.client.helptext import help_lines
    from rami.engine import get_variant

    simple, portuguese = get_variant("simple"), get_variant("portuguese")
    said = " ".join(lines(help_lines("undo", "playing", simple, 100)))
    assert "nothing waits to be sent" in said and "take 2 5s" not in said, said
    said = " ".join(lines(help_lines("take", "playing", simple, 100)))
    assert "In simple nobody may take a joker back" in said, said
    assert "To take the top of the discard pile, type draw discard." in said, said
    said = " ".join(lines(help_lines("take", "playing", portuguese, 100)))
    assert "Nothing is laid in portuguese" in said and "type draw discard" in said, said
    # Typed once the player has drawn, it points to no draw (which would be refused).
    from rami.client.commands import why_not_in_variant

    for variant in (simple, portuguese):
        after = why_not_in_variant("take", variant, drawn=True)
        assert "draw discard" not in after and "already taken your card" in after, after
    said = " ".join(lines(help_lines("lay", "playing", portuguese, 100)))
    assert "Nothing is laid in portuguese" in said, said
    # In the lobby (no game) and where the game has it, the command's own help.
    said = " ".join(lines(help_lines("undo", "playing", get_variant("tallage"), 100)))
    assert "take 2 5s" in said, said


def test_the_last_card_of_a_hand_is_the_one_to_discard_to_go_out_in_every_laying_game() -> None:
    """After a whole-hand lay in tallage the toolbar said "discard a card", where simple says
    "discard your last card to go out" (a new player's try)."""
    from rami.client.panel import play_hint

    for variant in (game_pb2.VARIANT_TALLAGE, game_pb2.VARIANT_SIMPLE):
        view = _view(variant=variant, phase=game_pb2.PHASE_PLAY, turn=0)
        view.ClearField("hand")
        view.hand.append(parse_cards("9s")[0] + 1)
        view.can_lay = False
        assert play_hint(view) == "discard your last card to go out", variant


def test_a_game_over_shows_no_one_offline() -> None:
    """Watching a finished table, its players showed "offline" while they were at other
    tables (a new player's try): once the game is over nobody is waited for, and who is
    connected is not shown (a seat the server played to the end still says away)."""
    view = _view(phase=game_pb2.PHASE_GAME_OVER)
    for p in view.players:
        p.connected = False
    players = text(toolbar_fragments(view, LOOK, width=200)).split("\n")[-1]
    assert "offline" not in players, players
    view.phase = game_pb2.PHASE_DRAW
    players = text(toolbar_fragments(view, LOOK, width=200)).split("\n")[-1]
    assert "offline" in players, players


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("\x1bPq#0;2;0;0;0\x1b\\dcs", "dcs"),
        ("\x1b_app\x1b\\ok", "ok"),
        ("\x9b31mok", "ok"),
        ("\x9d0;title\x07ok", "ok"),
        ("\x1b(0lqqk", "lqqk"),
        ("a\x1b7b\x1b8c", "abc"),
        ("hi \x1b[31", "hi"),
    ],
)
def test_escape_sequences_are_shown_as_nothing_not_as_their_body(text: str, kept: str) -> None:
    """A DCS's body or an ESC 7 left visible text behind (as the server cleaned them too)."""
    assert safe(text) == kept


@pytest.mark.parametrize(
    ("name", "typed", "example"),
    [
        ("add", "2c", "add 3 2c"),
        ("add", "3", "add 3 10h"),
        ("add", "", "add 3 10h"),
        ("take", "5s", "take 3 5s"),
        ("take", "2", "take 2 5s"),
    ],
)
def test_an_add_or_take_without_its_meld_says_how_it_is_typed(
    name: str, typed: str, example: str
) -> None:
    """A new player's add 2c got only "usage: add MELD CARDS [low|high]"."""
    from rami.client.moves import MoveError, parse_move

    with pytest.raises(MoveError) as refused:
        parse_move(name, typed, parse_cards("2c 5s 10h"))
    said = str(refused.value)
    assert f"{example}, for instance" in said and "number" in said, said


def test_the_note_of_a_lost_connection_says_for_how_long() -> None:
    """A player waited through a long outage with "connection lost: reconnecting..." and no
    sign of how long it had been: the toolbar, redrawn every second, now counts it."""
    from rami.client.session import lost_note

    assert lost_note(0.5) == "connection lost: reconnecting..."
    assert lost_note(12.9) == "connection lost for 12 s: reconnecting..."
    assert lost_note(70) == "connection lost for 1 min 10 s: reconnecting..."


def test_an_acts_answer_older_than_the_streams_update_leaves_the_newer_view() -> None:
    """The answer of a move (its view, update N) may be read after the stream's next update
    (N + 1, the next seat's move, which made it this seat's turn again): on a busy machine
    the answer's view replaced the newer one, the client showed the other seat's turn and
    refused every move typed ("it is Sara's turn"), while the table waited for this seat."""
    import asyncio

    from rami.client.link import Link
    from rami.client.session import ClientSession

    async def run() -> ClientSession:
        session = ClientSession(Link("127.0.0.1:9"), name="Ana", look=Look())
        session._set_view(_view(number=41, turn=0, phase=game_pb2.PHASE_DRAW))  # the stream's
        session._set_answer_view(_view(number=40, turn=1, phase=game_pb2.PHASE_DRAW))
        return session

    session = asyncio.run(run())
    assert session.view is not None and session.view.number == 41 and session.view.turn == 0


def test_the_stand_in_is_told_as_the_game_has_it() -> None:
    """Leaving a portuguese game, a player was told the stand-in "lays nothing" (nothing is
    laid there) and did not expect it to throw the cards of their melds."""
    from rami.client.session import STAND_IN, stand_in
    from rami.engine import get_variant

    said = stand_in(get_variant("portuguese"))
    assert "never declares" in said and "break up your melds" in said, said
    assert stand_in(get_variant("tallage")) == stand_in(get_variant("simple")) == STAND_IN


def test_a_tls_failure_is_said_as_what_to_do() -> None:
    """gRPC's details of a failed TLS connection (as seen against rami-server) are told as
    what the player can do, never as "no Rami server answers"."""
    from rami.client.link import unreached

    where = "127.0.0.1:50071"
    base = "failed to connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:50071: "
    said = unreached(where, True, base + "Tls handshake failed (TSI_PROTOCOL_FAILURE): "
                     "SSL_ERROR_SSL: error:1000007d:SSL routines:OPENSSL_internal:"
                     "CERTIFICATE_VERIFY_FAILED: certificate has expired: OK")  # fmt: skip
    assert "out of date (certificate has expired)" in said and "--ca" not in said, said
    said = unreached(where, True, base + "Hostname Verification Check failed.")
    assert "made out to another name" in said, said
    said = unreached(where, True, base + "Tls handshake failed (TSI_PROTOCOL_FAILURE): "
                     "SSL_ERROR_SSL: error:100000f7:SSL routines:OPENSSL_internal:"
                     "WRONG_VERSION_NUMBER")  # fmt: skip
    assert "does not speak TLS: connect without --tls" in said, said
    for said in (
        unreached(where, False, base + "Socket closed"),
        unreached(where, True, "failed to connect to all addresses; Connection refused"),
    ):
        assert said.startswith(f"no Rami server answers at {where}"), said


def test_a_void_round_is_not_said_to_be_the_stocks_doing_alone() -> None:
    # A round ends void when the stock runs out, or at the server's turn cap (docs/rules.md).
    void = ev.RoundResult(2, "void", None, (0, 0), (10, 20))
    text = ending_text(void, ["Ana", "Bo"])
    assert text.startswith("Round 2 is void: the stock ran out, or")
    assert "limit of turns" in text and text.endswith("Nobody pays.")


def test_a_move_with_the_discard_not_yet_taken_says_to_take_it_first() -> None:
    """``lay Kc Kd Kh, ...`` with K♥ the top of the pile, before ``draw discard``: "You don't
    hold K♥ (you hold K♣, K♦)" said nothing of the way to it."""
    from rami.client.checks import not_held

    hand = [C("Kc"), C("Kd"), C("5s")]
    said = not_held([C("Kh")], hand, LOOK.card_text, pile_top=C("Kh"))
    assert said.startswith("You don't hold K♥ (you hold K♣, K♦)"), said
    assert "K♥ is the top of the discard pile: type draw discard first" in said, said
    assert said.endswith("Nothing was played."), said
    plain = not_held([C("Qh")], hand, LOOK.card_text, pile_top=C("Kh"))
    assert "discard pile" not in plain, plain
    # With another card missing too, taking the top would not make the move: not said.
    more = not_held([C("Kh"), C("Qh")], hand, LOOK.card_text, pile_top=C("Kh"))
    assert "discard pile" not in more, more


def test_the_top_of_the_pile_is_untaken_only_while_the_rules_offer_it() -> None:
    """The note above is for a discard the player may take now: in the first circuit, say,
    "draw discard" would be refused."""
    from rami.client.checks import has_drawn, untaken_top

    offered = _view(
        variant=game_pb2.VARIANT_SIMPLE,
        phase=game_pb2.PHASE_DRAW,
        discard_top=C("Kh") + 1,
        draw_sources=[game_pb2.DRAW_SOURCE_STOCK, game_pb2.DRAW_SOURCE_DISCARD],
    )
    assert untaken_top(offered) == C("Kh")
    withheld = game_pb2.View()
    withheld.CopyFrom(offered)
    del withheld.draw_sources[:]
    withheld.draw_sources.append(game_pb2.DRAW_SOURCE_STOCK)
    assert untaken_top(withheld) is None
    playing = game_pb2.View()
    playing.CopyFrom(offered)
    playing.phase = game_pb2.PHASE_PLAY
    assert untaken_top(playing) is None
    # The dealer's first turn in simple is played without a card drawn: nothing was taken.
    assert not has_drawn(playing)
    playing.drawn = C("5s") + 1
    assert has_drawn(playing)
