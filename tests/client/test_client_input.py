"""What the person types, as pure functions: commands, forgiving card input, staged moves,
completion, the create command's options, and server addresses."""

from __future__ import annotations

import asyncio

import grpc
import pytest
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

from rami.client.commands import (
    LOBBY,
    PLAYING,
    WAITING,
    WATCHING,
    available,
    find,
    split_command,
    suggest,
)
from rami.client.completion import Situation, TableCompleter, card_matches
from rami.client.convert import event_from_proto
from rami.client.link import parse_address
from rami.client.look import Look
from rami.client.moves import MoveError, missing_cards, parse_move
from rami.client.newtable import parse_create
from rami.client.staging import Stage, plan
from rami.engine import (
    JOKER,
    VARIANTS,
    AddToMeld,
    Card,
    Declare,
    Discard,
    Draw,
    Lay,
    Meld,
    NewMeld,
    TakeJoker,
    parse_cards,
)
from rami.engine import events as ev
from rami.v1 import events_pb2, game_pb2, lobby_service_pb2

TALLAGE, SIMPLE = VARIANTS["tallage"], VARIANTS["simple"]


def C(code: str) -> Card:
    return Card.parse(code)


# -- commands ----------------------------------------------------------------------------------


def test_a_line_splits_into_a_command_and_its_arguments() -> None:
    assert split_command("  LAY 7h 8h 9h ") == ("lay", "7h 8h 9h")
    assert split_command("exit") == ("quit", "")
    assert split_command("chat hello there") == ("say", "hello there")
    assert find("?") is not None and find("nosuch") is None
    assert suggest("dicsard") == "discard" and suggest("xyzzy") is None
    # Among what could run where the person is: in the lobby, no move is a guess.
    assert suggest("clear") == "declare"
    assert suggest("clear", available(LOBBY)) != "declare"
    assert suggest("clear", cutoff=0.75) is None and suggest("dicsard", cutoff=0.75) == "discard"
    # A word too short to be alike any: the commands it begins, all of them.
    some = suggest("d", available(PLAYING), begun=True)
    assert some is not None and some.endswith(" or declare"), some
    assert set(some.replace(" or ", ", ").split(", ")) == {"draw", "discard", "declare"}, some
    # Only among the commands that run where the person is: in the lobby, no move.
    assert suggest("d", available(LOBBY), begun=True) != some
    assert suggest("d") is None  # (help's guess: one name, never a list)


def test_each_place_has_its_own_commands() -> None:
    names = {w: {c.name for c in available(w)} for w in (LOBBY, WAITING, PLAYING, WATCHING)}
    assert {"tables", "create", "join", "watch"} <= names[LOBBY]
    assert {"draw", "lay", "add", "take", "discard", "declare", "hint"} <= names[PLAYING]
    assert {"bot", "start"} <= names[WAITING]
    assert "draw" not in names[WATCHING] and "draw" not in names[LOBBY]
    assert all("help" in n and "quit" in n for n in names.values())


def test_help_and_completion_leave_out_moves_the_game_does_not_have() -> None:
    portuguese = {c.name for c in available(PLAYING, VARIANTS["portuguese"])}
    simple = {c.name for c in available(PLAYING, VARIANTS["simple"])}
    tallage = {c.name for c in available(PLAYING, VARIANTS["tallage"])}
    assert "declare" in portuguese and not {"lay", "add", "take"} & portuguese
    assert "lay" in simple and not {"add", "take", "declare"} & simple
    assert {"lay", "add", "take"} <= tallage and "declare" not in tallage
    assert _complete(Situation(PLAYING, variant=VARIANTS["portuguese"]), "d") == [
        "draw ",
        "discard ",
        "declare ",
    ]
    assert _complete(Situation(PLAYING, variant=VARIANTS["tallage"]), "d") == [
        "draw ",
        "discard ",
    ]


# -- moves: forgiving card input ---------------------------------------------------------------


@pytest.mark.parametrize("spelling", ["10h", "th", "10♥", "10H", "TH", "Th"])
def test_a_card_may_be_written_many_ways(spelling: str) -> None:
    assert parse_move("discard", spelling) == Discard(C("10h"))


def test_moves_read_as_the_engine_actions() -> None:
    assert parse_move("draw", "") == Draw("stock")
    assert parse_move("draw", "d") == Draw("discard")
    assert parse_move("draw", "Discard; lay 9c 10c jc") == Draw(
        "discard", Lay((NewMeld(tuple(parse_cards("9c 10c Jc"))),))
    )
    assert parse_move("lay", "7h 8h 9h | KS KD KC") == Lay(
        (
            NewMeld(tuple(parse_cards("7h 8h 9h"))),
            NewMeld(tuple(parse_cards("Ks Kd Kc"))),
        )
    )
    assert parse_move("add", "3 JK HIGH") == Lay((AddToMeld(3, (JOKER,), "high"),))
    assert parse_move("take", "2 5s; add 4 jk") == Lay(
        (
            TakeJoker(2, C("5s")),
            AddToMeld(4, (JOKER,), None),
        )
    )
    assert parse_move("declare", "9♣") == Declare(C("9c"))


@pytest.mark.parametrize(
    ("name", "args", "says"),
    [
        ("discard", "9x", "not a card: '9x'"),
        ("discard", "Q", "'Q' is not a card: its suit goes after its rank"),  # as typed
        ("lay", "7h 8H ZZ", "not a card: 'ZZ'"),
        ("draw", "Sideways", "not 'Sideways'"),
        ("discard", "9c 9d", "name exactly one card"),
        ("draw", "sideways", "not 'sideways'"),
        ("draw", "discrad", r"not 'discrad': did you mean discard\?"),
        ("draw", "stokc", r"not 'stokc': did you mean stock\?"),
        ("add", "x 9c", "a meld is named by its number"),
        # A discard chained after a lay (help lay says steps chain with ';'): it was refused
        # "Only lay, add and take go in a lay, not 'discard'", which a new player's try read
        # as a riddle.
        ("add", "3 8s; discard 2c", "discard is a command of its own: type it after this one"),
        ("lay", "7h 8h 9h; Declare 2c", "declare is a command of its own: type it after"),
        ("draw", "discard; lay 9c 10c jc; discard 2c", "discard is a command of its own"),
        ("discard", "7h; discard 8h", "discard can't be chained with other steps"),
        ("declare", "9c; discard 2c", "declare can't be chained with other steps"),
    ],
)
def test_a_move_that_cant_be_read_says_why(name: str, args: str, says: str) -> None:
    with pytest.raises(MoveError, match=says):
        parse_move(name, args)


@pytest.mark.parametrize(
    ("spelling", "written"),
    [("♦10", "10♦"), ("d10", "10d"), ("hQ", "Qh"), ("♠a", "A♠"), ("S7", "7S")],
)
def test_a_card_written_suit_first_is_refused_saying_so(spelling: str, written: str) -> None:
    # The suit before the rank is the one wrong order: the refusal names it, not the suit.
    with pytest.raises(MoveError, match=f"the rank comes first: {written}") as refused:
        parse_move("discard", spelling)
    assert "suit must be" not in str(refused.value)
    with pytest.raises(MoveError, match=f"the rank comes first: {written}"):
        parse_move("lay", f"9h {spelling} Jh")
    assert parse_move("draw", "st") == Draw("stock")  # a source's first letters are no card


@pytest.mark.parametrize("spelling", ["1h", "11h", "12s", "13c", "01h", "14d"])
def test_a_rank_is_a_2_10_j_q_or_k_never_a_number_past_10(spelling: str) -> None:
    # One rule, in the help and in the refusal alike: numbers are ranks 2 to 10 only.
    with pytest.raises(MoveError, match=r"ranks are A, 2-10, J, Q and K: numbers stop at 10"):
        parse_move("discard", spelling)
    with pytest.raises(MoveError, match=r"numbers stop at 10"):
        parse_move("lay", f"9h 10h {spelling}")
    with pytest.raises(MoveError, match=r"numbers stop at 10"):
        parse_move("take", f"2 {spelling}")
    lay = find("lay")
    assert lay is not None and "numbers stop at 10 (write A, J, Q, K)" in lay.details


def test_full_width_letters_and_digits_read_as_typed_ascii() -> None:
    # Typed with an input method for Chinese or Japanese, "５c" was refused: "numbers stop at
    # 10", a 5 being one.
    assert parse_move("discard", "５ｃ") == parse_move("discard", "5c")
    wide = parse_move("lay", "９ｈ　１０ｈ　ＪＨ，Ｋｓ ｋｈ ｋｃ")
    assert wide == parse_move("lay", "9h 10h jh, ks kh kc")


def test_cards_not_in_the_hand_are_found_before_anything_is_sent() -> None:
    hand = parse_cards("7h 8h 9h 5c JK")
    assert missing_cards(parse_move("lay", "7h 8h 9h"), hand) == []
    assert missing_cards(parse_move("lay", "7h 7h 8h"), hand) == [C("7h")]  # one copy only
    assert missing_cards(parse_move("discard", "Ks"), hand) == [C("Ks")]
    # A joker taken back is in the hand to be laid again.
    assert missing_cards(parse_move("take", "2 5c; add 3 JK; add 4 JK"), hand) == []
    assert missing_cards(parse_move("take", "2 5c; add 3 JK; add 4 JK; add 5 JK"), hand) == [JOKER]


# -- staged moves ------------------------------------------------------------------------------


def test_a_tallage_discard_waits_for_the_lay_that_uses_it() -> None:
    first = plan(Draw("discard"), Stage(), variant=TALLAGE, discard_top=C("9c"))
    assert first.send is None and first.stage == Stage(draw=C("9c"))
    assert "when you lay it" in first.note
    # The notes write the card as the screen does (symbols unless the terminal can't).
    shown = plan(
        Draw("discard"), Stage(), variant=TALLAGE, discard_top=C("9c"), card_text=Look().card_text
    )
    assert shown.note.startswith("you take 9♣ when you lay it")
    assert shown.stage.describe(Look().card_text) == "draw discard (9♣)"
    lay = parse_move("lay", "9c 10c Jc")
    second = plan(lay, first.stage, variant=TALLAGE, discard_top=C("9c"))
    assert second.send == Draw("discard", lay) and second.stage.empty
    # In simple and portuguese the discard needs no lay: it goes at once.
    assert plan(Draw("discard"), Stage(), variant=SIMPLE, discard_top=C("9c")).send == Draw(
        "discard"
    )


def test_a_joker_taken_back_waits_for_where_it_goes() -> None:
    take = parse_move("take", "4 5c")
    first = plan(take, Stage(), variant=TALLAGE, discard_top=None)
    assert first.send is None and first.stage.jokers == 1
    assert "where the joker goes" in first.note
    assert first.stage.describe() == "take 4 5c"
    blocked = plan(Discard(C("2d")), first.stage, variant=TALLAGE, discard_top=None)
    assert blocked.send is None and "cancel" in blocked.note
    second = plan(parse_move("add", "3 JK"), first.stage, variant=TALLAGE, discard_top=None)
    assert second.send == Lay((TakeJoker(4, C("5c")), AddToMeld(3, (JOKER,), None)))
    # Said in one line, it goes at once.
    assert (
        plan(parse_move("take", "4 5c; add 3 jk"), Stage(), variant=TALLAGE, discard_top=None).send
        == second.send
    )


def test_the_discard_and_a_joker_swap_can_wait_together() -> None:
    stage = plan(Draw("discard"), Stage(), variant=TALLAGE, discard_top=C("5c")).stage
    stage = plan(parse_move("take", "4 5c"), stage, variant=TALLAGE, discard_top=C("5c")).stage
    assert stage.describe() == "draw discard (5c); take 4 5c"
    done = plan(parse_move("lay", "10c Jc JK"), stage, variant=TALLAGE, discard_top=C("5c"))
    assert done.send == Draw(
        "discard",
        Lay(
            (
                TakeJoker(4, C("5c")),
                NewMeld(tuple(parse_cards("10c Jc JK"))),
            )
        ),
    )


def test_a_draw_typed_over_a_staged_draw_of_the_discard_says_it_dropped_it() -> None:
    """``draw discard`` staged (it waits for its lay), then ``draw stock``: the stock's draw
    goes, and the staged draw is said to be dropped, not lost without a word."""
    staged = plan(Draw("discard"), Stage(), variant=TALLAGE, discard_top=C("Jd")).stage
    stock = plan(Draw("stock"), staged, variant=TALLAGE, discard_top=C("Jd"))
    assert stock.send == Draw("stock") and stock.stage.empty
    assert stock.note == "dropped draw discard (Jd)"
    # The same draw typed again changes nothing, and drops nothing.
    again = plan(Draw("discard"), staged, variant=TALLAGE, discard_top=C("Jd"))
    assert again.stage == staged and "dropped" not in again.note
    # Typed again with its lay, it is made, not dropped.
    laid = plan(
        parse_move("draw", "discard; lay 10d Jd Qd"), staged, variant=TALLAGE, discard_top=C("Jd")
    )
    assert laid.send is not None and laid.note == ""
    # Nothing staged: nothing said.
    assert plan(Draw("stock"), Stage(), variant=TALLAGE, discard_top=C("Jd")).note == ""


# -- completion --------------------------------------------------------------------------------


def _complete(s: Situation, text: str) -> list[str]:
    return [
        c.text for c in TableCompleter(lambda: s).get_completions(Document(text), CompleteEvent())
    ]


SITUATION = Situation(
    PLAYING,
    hand=tuple(parse_cards("7h 8h 9h 9h 10h Ks Kd Kc JK 5c")),
    melds=((1, Meld.parse("4c JK 6c"), "Sara"), (2, Meld.parse("Qd Kd Ad"), "You")),
)


def test_completion_offers_the_commands_of_the_place() -> None:
    assert _complete(SITUATION, "d") == ["draw ", "discard ", "declare "]
    assert _complete(Situation(LOBBY), "") == [
        "tables ",
        "create ",
        "join ",
        "watch ",
        "name ",
        "help ",
        "quit",
    ]


def test_a_completed_command_that_takes_arguments_is_followed_by_a_space() -> None:
    # disc, Tab, 9h: discard 9h, not discard9h. A command that takes nothing gets no space;
    # the menu shows the names alone.
    (discard,) = TableCompleter(lambda: SITUATION).get_completions(
        Document("disc"), CompleteEvent()
    )
    assert discard.text == "discard " and discard.display_text == "discard"
    assert _complete(SITUATION, "hin") == ["hint"]


def test_completion_offers_only_the_cards_still_in_the_hand() -> None:
    assert _complete(SITUATION, "discard h") == ["7h", "8h", "9h", "10h"]
    assert _complete(SITUATION, "lay 9h 9h ") == ["5c", "Kc", "Kd", "7h", "8h", "10h", "Ks", "JK"]
    assert _complete(SITUATION, "lay 7h 8h, k") == ["Kc", "Kd", "Ks"]
    assert _complete(SITUATION, "lay t") == ["10h"]
    assert _complete(SITUATION, "draw ") == ["stock", "discard"]


def test_completion_of_arguments_that_are_only_commas_offers_what_a_blank_would() -> None:
    # Completion runs while the player types: "lay ," raised, and the traceback took the
    # Enter that followed (the line then glued to the next command).
    for command in ("lay", "discard", "take", "add", "say", "help", "sort"):
        assert _complete(SITUATION, f"{command} ,") == _complete(SITUATION, f"{command} ")
        assert _complete(SITUATION, f"{command} , ,") == _complete(SITUATION, f"{command} ")
    # After a comma, the next word is a new one: what was before it is not completed again
    # ("lay 7h," then Tab made "lay 77h").
    assert _complete(SITUATION, "lay 7h,") == _complete(SITUATION, "lay 7h ")
    assert _complete(SITUATION, "add 1 ,") == _complete(SITUATION, "add 1 ")


def test_completion_offers_meld_numbers_and_the_cards_a_joker_stands_for() -> None:
    assert _complete(SITUATION, "add ") == ["1", "2"]
    assert _complete(SITUATION, "take ") == ["1"]  # only melds with a joker
    assert _complete(SITUATION, "take 1 ") == ["5c"]
    assert "JK" in _complete(SITUATION, "take 1 5c; add 2 ")
    assert card_matches(C("Qs"), "q") and not card_matches(C("Qs"), "qh")


# -- create, addresses, events -----------------------------------------------------------------


def test_create_reads_a_variant_options_and_bots() -> None:
    spec = parse_create('portuguese players=3 bots=2 policy=greedy rounds=2 name="Friday game"')
    assert (spec.variant, spec.options, spec.bots, spec.policy, spec.name) == (
        "portuguese",
        {"players": 3, "rounds": 2},
        2,
        "greedy",
        "Friday game",
    )
    assert parse_create("").variant == "tallage"
    # Bots and no number of players: a seat for you and one for each bot, the game begins.
    assert parse_create("portuguese bots=2").options == {"players": 3}
    assert parse_create("bots=1").options == {"players": 2}
    assert parse_create("bots=0").options == {}
    # An option the variant does not have is said at once, before any table is asked for.
    with pytest.raises(ValueError, match=r"tallage has no option rounds"):
        parse_create("tallage rounds=3")
    assert parse_create("players=4 bots=2").options == {"players": 4}
    assert parse_create("simple simple_rami_sec=on").options == {"simple_rami_sec": True}


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ("players=2 bots=2", "leave you no seat"),
        ("colour=red", "unknown option 'colour'"),
        ("target=300", "target must be one of 201, 500, 1000"),
        ("policy=clever", "policy is one of"),
        ("players=many", "takes a whole number"),
        ("portugese bots=2", r"unknown word 'portugese': did you mean portuguese\?"),
        ("tallage privat", r"unknown word 'privat': did you mean private\?"),
        ("simple player=3", r"unknown option 'player': did you mean players\?"),
        ("tallage jokers=2", r"unknown option 'jokers': did you mean jokers_per_meld\?"),
        ("bots=4 players=4", "leave you no seat"),
        ("variant=portugese", r"unknown variant 'portugese': did you mean portuguese\?"),
        ("bots=6", r"6 bots leave you no seat: a table has at most 6 seats"),
        # Without a likely word, the words there are (found by a new player's try).
        ("rummy", r"unknown word 'rummy': the game is portuguese, tallage or simple"),
        ("tallage bots=1 fast", r"unknown word 'fast': after the game come key=value words"),
        ("tallage foo=bar", r"unknown option 'foo': the options are .*players.*jokers_per_meld"),
        ('name="Ana', r"a quotation mark \(\"\) is not closed"),
        # A name's second word, unquoted (a new player's try).
        (
            "portuguese name=Carol table",
            r"unknown word 'table': a name of several words is quoted, name=\"Carol table\"",
        ),
    ],
)
def test_create_says_what_is_wrong(args: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        parse_create(args)


def test_a_name_with_an_apostrophe_needs_no_quotes() -> None:
    """Found by a new player's try: "create simple name=Bruno's" said only "No closing
    quotation" (the client's own names are "Ana's tallage")."""
    assert parse_create("simple players=2 name=Bruno's").name == "Bruno's"
    assert parse_create("name=Bruno's bots=1").bots == 1
    assert parse_create('name="Bruno\'s table" bots=1').name == "Bruno's table"
    assert parse_create("name='Friday game'").name == "Friday game"
    assert parse_create("name='Bruno's table' bots=1").name == "Bruno's table"
    assert parse_create("name='90s bots=1").name == "'90s"
    assert parse_create("name=Friday\\ game").name == "Friday game"
    assert parse_create('name="say \\"hi\\""').name == 'say "hi"'


def test_an_address_takes_the_default_port() -> None:
    assert parse_address("rami.example.org") == "rami.example.org:50051"
    assert parse_address("localhost:6000") == "localhost:6000"
    assert parse_address("[::1]:7000") == "[::1]:7000"
    # gRPC's own target names (several servers of a cluster) go as they are.
    assert parse_address("dns:///rami.example:50051") == "dns:///rami.example:50051"
    assert parse_address("ipv4:10.0.0.1:50051,10.0.0.2:50051") == (
        "ipv4:10.0.0.1:50051,10.0.0.2:50051"
    )
    for bad in ("", "host:0", "host:http", ":50051"):
        with pytest.raises(ValueError):
            parse_address(bad)
    # An IPv6 address alone takes its brackets and the port; two ports are no address.
    assert parse_address("::1") == "[::1]:50051"
    assert parse_address("fe80::2") == "[fe80::2]:50051"
    with pytest.raises(ValueError, match=r"'localhost:48177:9' is not an address"):
        parse_address("localhost:48177:9")


def test_stream_events_become_engine_events() -> None:
    msg = events_pb2.Event(
        card_drawn=events_pb2.CardDrawn(
            seat=1, source=game_pb2.DRAW_SOURCE_DISCARD, card=C("9c") + 1
        )
    )
    assert event_from_proto(msg) == ev.Drew(1, "discard", C("9c"))
    msg = events_pb2.Event(chat_posted=events_pb2.ChatPosted(seat=2, text="hi"))
    assert event_from_proto(msg) is not None
    assert event_from_proto(events_pb2.Event()) is None


def test_a_refused_opening_under_the_bar_says_what_it_must_beat() -> None:
    # The rules check the least opening first: under a bar of 90, "at least 71" would be
    # true and of no use; the player is told the bar and what beats it.
    from rami.client.checks import refusal
    from rami.client.link import Refused

    low = Refused(
        "an opening needs clean melds worth at least 71; yours are worth 60",
        grpc.StatusCode.FAILED_PRECONDITION,
        "OPENING_TOO_LOW",
    )
    assert refusal(low, bar=90) == (
        "Refused: An opening must beat the bar of 90: it needs clean melds worth 91 or more; "
        "yours are worth 60. Nothing was played."
    )
    assert refusal(low, bar=0) == (
        "Refused: An opening needs clean melds worth at least 71; yours are worth 60. "
        "Nothing was played."
    )
    assert refusal(low, bar=50).startswith(
        "Refused: An opening needs clean melds worth at least 71"
    )


def test_a_refused_meld_of_many_cards_says_melds_are_put_apart_with_commas() -> None:
    from rami.client.checks import refusal
    from rami.client.link import Refused

    def mixed(cards: str) -> Refused:
        return Refused(
            f"{cards} is neither a run (one suit, ranks in a row) nor a set (one rank,"
            " different suits)",
            grpc.StatusCode.FAILED_PRECONDITION,
            "INVALID_MELD",
        )

    comma = "put commas between them"
    assert comma in refusal(mixed("10♣ 10♦ 10♥ J♣ J♦ J♥ 4♦ 5♦ 6♦"))
    assert comma not in refusal(mixed("10♣ J♦ Q♥"))  # one meld, wrong


def test_a_rank_typed_alone_is_answered_with_the_cards_of_that_rank_in_hand() -> None:
    hand = [C("3c"), C("3d"), C("Kh")]
    with pytest.raises(MoveError, match=r"'3' is not a card: .* 3c or 3d \(in your hand\)"):
        parse_move("discard", "3", hand)
    with pytest.raises(MoveError, match=r"'q' is not a card: .* Qh, for instance"):
        parse_move("discard", "q", hand)
    with pytest.raises(MoveError, match=r"'10' is not a card"):
        parse_move("lay", "8h 9h 10", hand)
    assert parse_move("discard", "3c", hand) == Discard(C("3c"))
    # An add or a take chained after a lay starts with a meld's number, not a card.
    assert parse_move("lay", "4c 5c 6c; add 2 Kh", hand) == parse_move("lay", "4c 5c 6c; add 2 Kh")
    assert parse_move("lay", "7h 8h 9h; take 2 5s", hand)
    with pytest.raises(MoveError, match=r"'9' is not a card"):
        parse_move("lay", "7h 8h 9; add 2 Kh", hand)


def test_a_joker_added_at_the_wrong_end_says_how_to_name_the_other() -> None:
    from rami.client.checks import refusal
    from rami.client.link import Refused

    refused = Refused(
        "3♣ does not go at either end of 6♣ 7♣ 8♣ JK: the joker went to the high end, as none"
        " was named; name the low end to put it there",
        grpc.StatusCode.FAILED_PRECONDITION,
        "INVALID_MELD",
    )
    assert refusal(refused).endswith(
        "name the low end to put it there: type low after the cards of the add. Nothing was played."
    ), refusal(refused)


def test_a_discard_or_declaration_with_no_card_asks_which() -> None:
    for name in ("discard", "declare"):
        with pytest.raises(MoveError, match=rf"^{name} which card\? Type it after {name}"):
            parse_move(name, "  ")


def test_a_discard_without_its_card_gives_an_example_from_the_hand() -> None:
    # "discard 7h, for instance" to a player without a 7♥: typed as shown, and refused.
    for name in ("discard", "declare"):
        with pytest.raises(MoveError, match=rf"Type it after {name}: {name} 10c, for instance"):
            parse_move(name, "", parse_cards("Qh JK 10c"))


def test_a_number_beyond_the_list_seen_says_which_numbers_it_has() -> None:
    """``watch 2`` with a list of one table said "tables 1 to 1" (a new player's try)."""
    from rami.client.finder import TableFinder

    finder = TableFinder(None, None, lambda: set())  # type: ignore[arg-type]
    one, two = lobby_service_pb2.TableInfo(table_id="a"), lobby_service_pb2.TableInfo(table_id="b")
    finder.seen = [one]
    with pytest.raises(ValueError, match=r"^the list you saw has only table 1: tables lists"):
        asyncio.run(finder.resolve("2"))
    finder.seen = [one, two]
    with pytest.raises(ValueError, match=r"^the list you saw has tables 1 to 2: tables lists"):
        asyncio.run(finder.resolve("3"))


def test_cards_of_one_meld_typed_apart_by_commas_are_told_how_to_type_them() -> None:
    # "lay 2d,3d,4d" was refused "a meld needs at least 3 cards, not 1", which did not say that
    # commas separate melds.
    with pytest.raises(MoveError) as e:
        parse_move("lay", "2d,3d,4d")
    assert str(e.value) == (
        "a comma starts the next meld, and a meld has 3 cards or more: lay 2d 3d 4d lays the"
        " three in one meld"
    )
    assert parse_move("lay", "2d 3d 4d, 8c 8d 8h") == parse_move("lay", "2d 3d 4d | 8c 8d 8h")
    # As typed (case and the bar), and the ranks checked first.
    with pytest.raises(MoveError, match=r"^a bar starts the next meld.*: lay QS KS AS lays"):
        parse_move("lay", "QS|KS|AS")
    with pytest.raises(MoveError) as e:
        parse_move("lay", "11h,12h,13h")
    assert "comma" not in str(e.value)
