"""The commands a person types: their names, where they apply, their help, and how a line
splits into a command and its arguments.

>>> split_command("  Discard 9C ")
('discard', '9C')
>>> split_command("?")
('help', '')
>>> suggest("dicsard")
'discard'
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass

from rami.engine import Variant

__all__ = [
    "COMMANDS",
    "LOBBY",
    "OVER",
    "PLAYING",
    "WAITING",
    "WATCHING",
    "Command",
    "available",
    "details",
    "find",
    "not_in_variant",
    "split_command",
    "suggest",
]

#: Where a person can be: not at a table, seated before the game, seated in it, seated at a
#: game that is over, watching.
LOBBY, WAITING, PLAYING, OVER, WATCHING = "lobby", "waiting", "playing", "over", "watching"
_ANY = frozenset({LOBBY, WAITING, PLAYING, OVER, WATCHING})
_AT_TABLE = frozenset({WAITING, PLAYING, OVER, WATCHING})


@dataclass(frozen=True, slots=True)
class Command:
    """One command: its usage line, one-line summary, longer help and where it applies."""

    name: str
    usage: str
    summary: str
    details: str
    where: frozenset[str]
    aliases: tuple[str, ...] = ()


COMMANDS: tuple[Command, ...] = (
    Command(
        "draw",
        "draw stock|discard",
        "take the top card of the stock or of the discard pile",
        "draw stock (or just draw) takes the stock's top card; draw discard takes the face-up "
        "card. In tallage a discard taken must be laid at once: type draw discard, then the "
        "lay that uses it (lay, add or take), and the client sends both together. Or in one "
        "line: draw discard; lay 9c 10c Jc",
        frozenset({PLAYING}),
    ),
    Command(
        "lay",
        "lay CARDS[, CARDS...]",
        "lay new melds from your hand (commas between melds)",
        "lay 7h 8h 9h, Ks Kd Kc lays two melds at once (your tallage opening, or a whole-hand "
        "finish). A joker stands for the gap it fills, or for the end it is written at: "
        "lay JK 8h 9h puts it below (but never below an ace: lay JK Ad 2d puts it above). "
        "Cards: 10h, th, 10♥, qs, JK (or x), in any case; a rank is A, 2-10, J, Q or K, and "
        "numbers stop at 10 (write A, J, Q, K): 11h is not a card. "
        "Chain steps with ';': lay 4c 5c 6c; add 2 Kh",
        frozenset({PLAYING}),
    ),
    Command(
        "add",
        "add MELD CARDS [low|high]",
        "add cards from your hand to meld number MELD",
        "add 3 10h puts 10♥ on meld 3 (the numbers are shown beside the melds). A joker added "
        "to a run goes to its high end unless you say low: add 3 JK low",
        frozenset({PLAYING}),
    ),
    Command(
        "take",
        "take MELD CARD",
        "take a joker back from a meld, putting CARD in its place",
        "take 2 5s puts your 5♠ in meld 2 in place of the joker that stands for it; the joker "
        "must be laid again in the same lay, so the client then asks where it goes: answer "
        "with add 3 JK or lay 10c Jc JK. Or in one line: take 2 5s; add 3 JK",
        frozenset({PLAYING}),
    ),
    Command(
        "discard",
        "discard CARD",
        "discard a card, ending your turn",
        "discard 9c puts 9♣ face up on the discard pile; your turn is over. Discarding your "
        "last card ends the round (Rami).",
        frozenset({PLAYING}),
    ),
    Command(
        "declare",
        "declare CARD",
        "portuguese: put CARD face down and show the other 13",
        "declare 9c puts 9♣ face down and shows your other 13 cards: they must all be in "
        "melds, with at least one clean run. hint tells you which cards can go face down. "
        "When the hand would not be complete (and the table shows an incomplete declaration "
        "rather than refusing it), the client asks first: yes declares anyway.",
        frozenset({PLAYING}),
    ),
    Command(
        "cancel",
        "cancel",
        "drop everything staged (a draw discard, joker takes)",
        "cancel forgets every draw discard, take or lay that is waiting for its lay; nothing "
        "staged has been sent, so nothing changes at the table. undo drops only the last.",
        frozenset({PLAYING}),
    ),
    Command(
        "undo",
        "undo",
        "drop the last staged command, keeping the rest",
        "undo takes back the last command that was staged and not yet sent (draw discard, "
        "take 2 5s, or a lay waiting for a joker's place): draw discard; take 4 5c, then undo, "
        "leaves draw discard staged. What was sent can't be undone.",
        frozenset({PLAYING}),
    ),
    Command(
        "hint",
        "hint",
        "the best arrangement of your hand and what it allows now",
        "hint asks the solver for the best split of your hand into melds, what is left over, "
        "and lists the plays open to you now as commands you can type.",
        frozenset({PLAYING}),
    ),
    Command(
        "sort",
        "sort [suit|rank]",
        "sort your hand by suit or by rank (F2 toggles)",
        "sort rank groups your cards by rank; sort suit by suit then rank. F2 toggles. The "
        "order is kept for your next run of the client.",
        frozenset({WAITING, PLAYING, OVER}),
    ),
    Command(
        "table",
        "table",
        "show the table in full: every meld, player and score",
        "table prints every player's hand size, score and opening, and the cards each is "
        "known to hold (taken from the pile, or shown in a declaration), then the melds with "
        "their numbers (for add and take) and what each joker stands for.",
        _AT_TABLE,
    ),
    Command(
        "scores",
        "scores",
        "the score sheet: what everyone paid in each round, and the totals",
        "scores lists every finished round: the points each player paid, how the round "
        "ended, and the totals so far.",
        frozenset({PLAYING, OVER, WATCHING}),
        ("score",),
    ),
    Command(
        "pile",
        "pile",
        "the discard pile's last cards: who threw them, who took them",
        "pile lists the cards thrown on the discard pile this round, the newest first, with "
        "who discarded each and who took it back up. The panel shows the top few.",
        frozenset({PLAYING, OVER, WATCHING}),
    ),
    Command(
        "say",
        "say TEXT",
        "write in the table's chat",
        "say good game! writes to everyone.",
        frozenset({WAITING, PLAYING, OVER}),
        ("chat",),
    ),
    Command(
        "save",
        "save FILE",
        "save the game record (JSON) to FILE",
        "save game.json writes the game record. Once the game is over the record is whole and "
        "rami-client replay game.json steps through it; saved during the game, it holds the "
        "game so far, which replay does not show (save again when the game is over).",
        _AT_TABLE,
    ),
    Command(
        "rematch",
        "rematch",
        "after the game: a new table with the same game, options and bots",
        "rematch, once the game is over, creates a new table with the same game and options, "
        "sits you there and seats the same built-in bots. Other players are not seated for "
        "you: the client writes the new table's id in the old table's chat, and the game "
        "starts when they join (or when you type start). A game has one rematch: when another "
        "player of it typed rematch first, yours takes a seat at the table they made (while "
        "it has a free seat and has not started).",
        frozenset({OVER}),
    ),
    Command(
        "bot",
        "bot [random|greedy|strong|expert]",
        "seat a built-in bot at this table",
        "bot strong seats a strong bot in the first free seat; the game starts by itself when "
        "every seat is taken. An expert bot searches before each move (half a second).",
        frozenset({WAITING}),
    ),
    Command(
        "start",
        "start",
        "start the game with the players seated now",
        "start begins the game with whoever is seated (at least two); with a seat still "
        "empty it asks first, since the empty seats close for the game.",
        frozenset({WAITING}),
    ),
    Command(
        "leave",
        "leave",
        "leave this table and go back to the lobby",
        "leave gives up your seat or stops watching. During a game it asks first (y leaves), "
        "and the server plays your seat from then on (it draws and discards, and lays "
        "nothing); rami-client connect remembers the seat, and join takes it back while the "
        "game lasts.",
        _AT_TABLE,
    ),
    Command(
        "tables",
        "tables [all]",
        "list the tables on the server",
        "tables lists the public tables whose game is not over, and those where you hold a "
        "seat: its number in the list, its short id (the start of its id, enough to tell it "
        "apart), game, status and seats. The others (finished, closed) are counted; tables "
        "all lists them too.",
        frozenset({LOBBY}),
        ("list", "ls"),
    ),
    Command(
        "create",
        "create [VARIANT] [players=N] [bots=N] [policy=P] [name=TEXT] [OPTION=VALUE]",
        "create a table and sit at it",
        "create tallage players=4 bots=3 seats you with three strong bots and starts at once "
        "(with bots=N and no players=, the table has a seat for you and one for each bot). "
        "VARIANT is tallage (default), simple or portuguese. Other options: rounds=N "
        "(portuguese), target=201|500|1000, round_cap=N (tallage and simple: the game ends "
        "after N rounds at the latest; round_cap=1 is a short game), opening=71|51, "
        "turn_seconds=N (a turn clock: 60 unless given; turn_seconds=0 for none), "
        "jokers_per_meld=1|2, private (the table is not listed: the others join it by its "
        'whole id). A name of several words is quoted: name="Friday game". See '
        "docs/rules.md for every option.",
        frozenset({LOBBY}),
    ),
    Command(
        "join",
        "join [TABLE]",
        "sit at a table (its number in the list, or its short id)",
        "join k3vq7a sits at the table whose id starts so (the short id the list shows, which "
        "stays the same as tables come and go; the whole id works too, for a private table). "
        "join 2 sits at the second table of the list you saw, if the server's list still has "
        "it there: when tables were created or closed since, nothing is done and the list is "
        "shown again. Tab completes the short ids of the last list. join with no table takes "
        "back a seat you hold at a game still on (the first listed), or else sits at the "
        "newest table with a free seat.",
        frozenset({LOBBY}),
    ),
    Command(
        "watch",
        "watch TABLE",
        "watch a table as a spectator",
        "watch k3vq7a (a short id) or watch 2 (the list you saw, checked as for join) follows "
        "a table without taking a seat: you see what every watcher sees (no hand) and read the "
        "players' chat, but don't write in it.",
        frozenset({LOBBY}),
    ),
    Command(
        "name",
        "name NAME",
        "change the name you join tables with",
        "name Sara: the name others see when you join a table next.",
        frozenset({LOBBY}),
    ),
    Command(
        "help",
        "help [COMMAND]",
        "the commands you can use now, or one in detail",
        "help lists what you can type now, each command with a summary when the window has "
        "the rows for it, else the commands in columns; help lay explains lay.",
        _ANY,
        ("?",),
    ),
    Command(
        "quit",
        "quit",
        "leave the client (Ctrl-D too)",
        "quit (or Ctrl-D) closes the client. During a game it asks first (yes, or Ctrl-D "
        "again, quits). A game you are seated at goes on, the server playing your seat; "
        "rami-client connect remembers the seat, and join takes it back next time. In "
        "rami-client play the game ends with the client.",
        _ANY,
        ("exit", "q"),
    ),
)

_BY_NAME = {c.name: c for c in COMMANDS}
_ALIASES = {a: c.name for c in COMMANDS for a in c.aliases}


def find(word: str) -> Command | None:
    """The command of a name or alias (any case), or None."""
    w = word.strip().lower()
    return _BY_NAME.get(_ALIASES.get(w, w))


def split_command(line: str) -> tuple[str, str]:
    """A typed line as (command name, arguments); aliases are resolved, case ignored."""
    word, _, rest = line.strip().partition(" ")
    w = word.lower()
    return _ALIASES.get(w, w), rest.strip()


def not_in_variant(variant: Variant | None) -> frozenset[str]:
    """The moves ``variant``'s game does not have: nothing is laid where hands stay closed,
    and without an opening nothing is added, taken back or staged (none for no game)."""
    if variant is None:
        return frozenset()
    hidden = set()
    if variant.declares:
        hidden.add("lay")
    else:
        hidden.add("declare")
    if not variant.has_opening:
        hidden.update(("add", "take", "cancel", "undo"))
    return frozenset(hidden)


def why_not_in_variant(name: str, variant: Variant, drawn: bool = False) -> str:
    """Why the move ``name`` (one of :func:`not_in_variant`'s) is not in ``variant``'s game
    (``drawn``: typed on the player's turn after the draw, when no draw is to be had)."""
    if name == "declare":
        return f"Declaring is for portuguese; in {variant.id} you lay your melds."
    if name in ("undo", "cancel"):
        return (
            f"In {variant.id} nothing waits to be sent: every move goes to the table as you"
            f" type it, so there is nothing to {name}."
        )
    # take: a rummy player's word for taking the discard, which is draw discard here.
    pile = ""
    if name == "take":
        pile = (
            " You have already taken your card this turn."
            if drawn
            else " To take the top of the discard pile, type draw discard."
        )
    if variant.declares and name in ("lay", "add", "take"):
        return f"Nothing is laid in {variant.id}: hands stay closed; declare to finish.{pile}"
    what = "add to a meld" if name == "add" else "take a joker back"
    return f"In {variant.id} nobody may {what}: you lay your whole hand at once.{pile}"


#: Help that reads differently where the game has no opening (nothing is added or taken).
_NO_OPENING_DETAILS = {
    "lay": "lay 7h 8h 9h, Ks Kd Kc, ... lays melds from your hand; here you finish by laying "
    "every card but one at once, then discard the last. A joker stands for the gap it "
    "fills, or for the end it is written at: lay JK 8h 9h puts it below (never below an "
    "ace: lay JK Ad 2d puts it above). Cards: 10h, th, "
    "10♥, qs, JK (or x), in any case.",
}


def details(command: Command, variant: Variant | None = None) -> str:
    """The longer help of ``command`` as it reads in ``variant``'s game (why the game has
    none, for a command it has not)."""
    if variant is not None and command.name in not_in_variant(variant):
        return why_not_in_variant(command.name, variant)
    if variant is not None and not variant.has_opening:
        return _NO_OPENING_DETAILS.get(command.name, command.details)
    return command.details


def available(where: str, variant: Variant | None = None) -> list[Command]:
    """The commands that apply ``where`` the person is (and in ``variant``'s game)."""
    hidden = not_in_variant(variant)
    return [c for c in COMMANDS if where in c.where and c.name not in hidden]


def suggest(
    word: str, among: Iterable[Command] = COMMANDS, cutoff: float = 0.6, begun: bool = False
) -> str | None:
    """The command a mistyped word most likely meant, of those ``among`` (by default every
    command; a session asks first of those it could run where the person is), if one is at
    least ``cutoff`` alike (difflib's ratio); else, with ``begun``, the commands the word
    begins, if any ("draw, discard or declare" for "d")."""
    names = [c.name for c in among]
    found = difflib.get_close_matches(word.lower(), names, n=1, cutoff=cutoff)
    if found:
        return found[0]
    starts = [n for n in names if begun and word and n.startswith(word.lower())]
    if len(starts) > 1:
        return f"{', '.join(starts[:-1])} or {starts[-1]}"
    return starts[0] if starts else None
