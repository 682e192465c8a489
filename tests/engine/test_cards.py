"""Cards (RULES.md §1): parsing and formatting at the edges, ranks, suits, colours and decks."""

from __future__ import annotations

import pytest

from rami.engine import (
    CARDS,
    JOKER,
    Card,
    CardError,
    MalformedAction,
    format_cards,
    parse_action,
    parse_cards,
    sort_cards,
)
from rami.engine.cards import count_vector, full_deck, is_red


@pytest.mark.parametrize("text", ["10h", "Th", "10♥", "10H", "th", " 10h ", "10♡"])
def test_ten_of_hearts_parses_from_every_spelling(text: str) -> None:
    card = Card.parse(text)
    assert (card.rank, card.suit) == (10, 2)
    assert str(card) == "10♥"
    assert card.code() == "10h"


@pytest.mark.parametrize(
    ("text", "rank", "suit"),
    [("qs", 12, 3), ("QS", 12, 3), ("Ac", 1, 0), ("kd", 13, 1), ("2♣", 2, 0), ("J♠", 11, 3)],
)
def test_faces_parse_case_insensitively(text: str, rank: int, suit: int) -> None:
    card = Card.parse(text)
    assert (card.rank, card.suit) == (rank, suit)
    assert not card.is_joker


@pytest.mark.parametrize("text", ["JK", "jk", "joker", "*"])
def test_the_joker_parses_and_formats_as_jk(text: str) -> None:
    card = Card.parse(text)
    assert card == JOKER
    assert card.is_joker
    assert str(card) == "JK" and card.code() == "JK"
    assert (card.rank, card.suit) == (0, -1)


@pytest.mark.parametrize("text", ["", "h", "10", "1x", "Zh", "15h", "0s", "10hh", "A"])
def test_text_that_names_no_card_is_a_value_error(text: str) -> None:
    with pytest.raises(CardError) as info:
        Card.parse(text)
    assert isinstance(info.value, ValueError)
    assert repr(text) in str(info.value)


def test_every_card_round_trips_through_its_code_its_symbol_and_its_repr() -> None:
    for card in CARDS:
        assert Card.parse(card.code()) == card
        assert Card.parse(str(card)) == card
        assert eval(repr(card), {"Card": Card}) == card


def test_cards_are_small_integers_suit_by_suit() -> None:
    assert Card.parse("Ac") == 0 and Card.parse("Kc") == 12
    assert Card.parse("Ad") == 13 and Card.parse("Ks") == 51
    assert JOKER == 52
    assert len(CARDS) == 53


def test_card_of_a_rank_and_suit_reads_a_high_ace_as_the_ace() -> None:
    assert Card.of(14, 2) == Card.parse("Ah") == Card.of(1, 2)
    assert Card.of(10, 0) == Card.parse("10c")
    with pytest.raises(CardError):
        Card.of(0, 0)
    with pytest.raises(CardError):
        Card.of(5, 4)


def test_red_suits_are_diamonds_and_hearts() -> None:
    assert [is_red(s) for s in range(4)] == [False, True, True, False]


def test_parse_cards_takes_spaces_and_commas_and_format_cards_writes_them_back() -> None:
    hand = parse_cards("7h, 8h 9h,JK  10s")
    assert format_cards(hand) == "7♥ 8♥ 9♥ JK 10♠"
    assert format_cards(hand, ascii=True) == "7h 8h 9h JK 10s"
    assert parse_cards(["Qs", "jk"]) == [Card.parse("Qs"), JOKER]
    with pytest.raises(ValueError):
        parse_cards("7h 8x")


def test_sort_cards_by_suit_then_rank_or_by_rank_then_suit_jokers_last() -> None:
    hand = parse_cards("JK Ks 2c Ah 2h")
    assert format_cards(sort_cards(hand)) == "2♣ A♥ 2♥ K♠ JK"
    assert format_cards(sort_cards(hand, by_rank=True)) == "A♥ 2♣ 2♥ K♠ JK"


def test_a_full_deck_holds_two_copies_of_each_face_and_the_jokers() -> None:
    portuguese = full_deck(2, 2)
    moroccan = full_deck(2, 4)
    assert len(portuguese) == 106 and len(moroccan) == 108
    counts = count_vector(moroccan)
    assert counts[:52] == [2] * 52 and counts[52] == 4


def test_an_add_or_a_take_without_its_cards_says_what_it_takes() -> None:
    for text, usage in (("take 1", "usage: take MELD CARD"), ("add 2", "usage: add MELD CARDS")):
        with pytest.raises(MalformedAction) as info:
            parse_action(text)
        assert str(info.value).startswith(usage) and "..." not in str(info.value), info.value


def test_an_action_naming_an_unknown_card_is_malformed_and_a_value_error() -> None:
    with pytest.raises(MalformedAction) as info:
        parse_action("discard 11x")
    assert info.value.reason == "BAD_CARD"
    assert isinstance(info.value, ValueError)
