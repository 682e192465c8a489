"""rami.rl: the three frameworks' own checks, and what the environments promise.

The frameworks are the optional extra ``rami[rl]`` (in ``dev`` too, so ``make test`` runs
these); without them the tests are skipped, saying which is missing.
"""

from __future__ import annotations

import itertools
import random
import warnings

import numpy as np
import pytest

pytest.importorskip("numpy", reason="rami.rl needs numpy (pip install 'rami[rl]')")
pettingzoo = pytest.importorskip("pettingzoo", reason="pip install 'rami[rl]' for PettingZoo")
gymnasium = pytest.importorskip("gymnasium", reason="pip install 'rami[rl]' for Gymnasium")

from rami.engine import Phase  # noqa: E402
from rami.engine.events import Declared  # noqa: E402
from rami.rl import Match, SeatEnv, env, raw_env  # noqa: E402

VARIANTS = ("tallage", "portuguese", "simple")
#: Short games for tests: two rounds of at most 40 turns.
SHORT = {
    "tallage": {"round_cap": 2},
    "portuguese": {"rounds": 2},
    "simple": {"round_cap": 2},
}


def random_game(match: Match, rng: random.Random, most: int = 200_000) -> list[float]:
    """Play ``match`` to its end by uniformly random legal steps; each seat's total reward."""
    totals = [0.0] * match.players
    for _ in range(most):
        if match.over:
            return totals
        for seat, r in enumerate(match.step(rng.choice(match.legal()))):
            totals[seat] += r
    raise AssertionError("the game did not end within its bound")


@pytest.mark.parametrize("variant", VARIANTS)
def test_pettingzoo_api_test_passes(variant: str) -> None:
    from pettingzoo.test import api_test

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # its hints about Dict observations (action masks)
        api_test(env(variant=variant, players=2), num_cycles=300)
        api_test(env(variant=variant, players=3), num_cycles=100)


@pytest.mark.parametrize("variant", VARIANTS)
def test_gymnasium_env_checker_passes(variant: str) -> None:
    from gymnasium.utils.env_checker import check_env

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_env(SeatEnv(variant=variant), skip_render_check=True)


def test_a_seat_env_plays_a_whole_game_against_policies() -> None:
    e = SeatEnv(variant="tallage", players=3, seat=1, opponents=["greedy", "random"])
    obs, info = e.reset(seed=5)
    rng = np.random.default_rng(5)
    done, steps, total = False, 0, 0.0
    while not done:
        assert obs["action_mask"].any() and (info["action_mask"] == obs["action_mask"]).all()
        step = int(rng.choice(np.flatnonzero(obs["action_mask"])))
        obs, reward, done, truncated, info = e.step(step)
        assert not truncated
        total += reward
        steps += 1
    assert e.match.over and total in (-0.5, 1.0, -1.0, 0.5, 0.0) and steps > 10
    first = SeatEnv(variant="tallage").reset(seed=9)[0]["observation"]
    again = SeatEnv(variant="tallage").reset(seed=9)[0]["observation"]
    assert (first == again).all()  # one seed, one game


def test_an_illegal_step_ends_the_seat_env_episode_and_changes_nothing() -> None:
    e = SeatEnv(variant="simple")
    obs, _ = e.reset(seed=1)
    before = e.match.game.state_key()
    illegal = int(np.flatnonzero(obs["action_mask"] == 0)[0])
    _, reward, done, _, info = e.step(illegal)
    assert (reward, done, info["illegal"]) == (-1.0, True, True)
    assert e.match.game.state_key() == before
    with pytest.raises(RuntimeError, match="reset"):
        e.step(illegal)


@pytest.mark.parametrize("variant", VARIANTS)
def test_random_games_end_and_game_rewards_are_zero_sum(variant: str) -> None:
    rng = random.Random(3)
    for seed in range(2):
        m = Match(variant, 2, seed=seed, turn_cap=40, **SHORT[variant])
        totals = random_game(m, rng)
        assert sum(totals) == pytest.approx(0.0)
        winners = m.game.winners
        if len(winners) == 1:
            assert totals[winners[0]] == 1.0


def test_round_rewards_are_the_points_paid() -> None:
    m = Match("tallage", 3, seed=2, rewards="round", turn_cap=40, round_cap=3)
    totals = random_game(m, random.Random(2))
    assert totals == pytest.approx([-t / 100 for t in m.game.totals])


def test_the_observation_holds_no_hidden_card() -> None:
    """Deal the cards a seat can't see afresh: its observation does not change."""
    m = Match("tallage", 3, seed=4)
    rng = random.Random(4)
    for _ in range(300):
        if m.over:
            break
        seen = m.observe(0)
        other = m.clone()
        g = other.game
        hidden = [c for s in (1, 2) for c in g.hands[s]] + list(g.stock)
        known = [list(other.known[s].elements()) for s in range(3)]
        rng.shuffle(hidden)
        for s in (1, 2):
            for c in known[s]:
                hidden.remove(c)
            size = len(g.hands[s])
            g.hands[s] = sorted(known[s] + [hidden.pop() for _ in range(size - len(known[s]))])
        g.stock = hidden
        assert (other.observe(0) == seen).all()
        m.step(rng.choice(m.legal()))


def test_the_layout_names_every_entry_once() -> None:
    m = Match("portuguese", 4)
    blocks = m.layout.blocks
    assert blocks[0][1] == 0 and blocks[-1][2] == m.layout.size == m.observe(0).size
    assert all(a[2] == b[1] for a, b in itertools.pairwise(blocks))
    hand = m.observe(2)[m.layout.slice("hand")]
    assert hand.sum() == pytest.approx(sum(0.25 if c == 52 else 0.5 for c in m.game.hands[2]))


def test_a_mask_is_the_match_legal_steps_and_an_agent_not_selected_has_none() -> None:
    e = raw_env(variant="simple", players=2)
    e.reset(seed=3)
    sel = e.agent_selection
    other = next(a for a in e.possible_agents if a != sel)
    assert list(np.flatnonzero(e.observe(sel)["action_mask"])) == e.match.legal()
    assert not e.observe(other)["action_mask"].any()
    assert e.match.game.phase in (Phase.DRAW, Phase.PLAY)


@pytest.mark.parametrize("variant", ["tallage", "portuguese"])
def test_after_an_illegal_step_no_agent_is_shown_a_mask(variant: str) -> None:
    """The wrapped env ends the game on an illegal step, and PettingZoo then selects each agent
    in turn to be stepped out: none may be shown a mask, least of all the offender's (its
    steps name the offender's cards)."""
    e = env(variant=variant, players=2)
    e.reset(seed=1)
    offender = e.agent_selection
    obs, *_ = e.last()
    e.step(int(np.flatnonzero(obs["action_mask"] == 0)[0]))
    seen = []
    for agent in e.agent_iter(max_iter=10):
        obs, reward, terminated, truncated, _ = e.last()
        seen.append(agent)
        assert terminated and truncated  # as TerminateIllegalWrapper sets them (docs/rl.md)
        assert not obs["action_mask"].any(), f"{agent} is shown a mask after the game ended"
        assert reward == (-1 if agent == offender else 0)
        e.step(None)
    assert sorted(seen) == sorted(e.possible_agents)
    # Every agent stepped out, PettingZoo selects the offender again: still no mask.
    assert not any(e.unwrapped.observe(a)["action_mask"].any() for a in e.possible_agents)


# -- OpenSpiel ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pyspiel():  # type: ignore[no-untyped-def]
    spiel = pytest.importorskip("pyspiel", reason="pip install 'rami[rl]' for OpenSpiel")
    import rami.rl.openspiel  # noqa: F401 (registers the games)

    return spiel


@pytest.mark.parametrize("variant", VARIANTS)
def test_openspiel_random_simulation_test_passes(pyspiel, variant: str) -> None:  # type: ignore[no-untyped-def]
    game = pyspiel.load_game(f"python_rami_{variant}", {"turn_cap": 20})
    pyspiel.random_sim_test(game, num_sims=2, serialize=True, verbose=False)


def test_openspiel_resampling_keeps_what_the_seat_knows(pyspiel) -> None:  # type: ignore[no-untyped-def]
    game = pyspiel.load_game("python_rami_tallage", {"turn_cap": 30})
    rng = np.random.RandomState(7)
    state = game.new_initial_state()
    sampler = pyspiel.UniformProbabilitySampler(0.0, 1.0)
    checked = 0
    while not state.is_terminal():
        if state.is_chance_node():
            outcomes, probs = zip(*state.chance_outcomes(), strict=True)
            assert sum(probs) == pytest.approx(1.0)
            state.apply_action(int(rng.choice(outcomes, p=probs)))
            continue
        player = state.current_player()
        other = state.resample_from_infostate(player, sampler)
        assert other.information_state_string(player) == state.information_state_string(player)
        assert other.legal_actions() == state.legal_actions()
        assert (other.match.observe(player) == state.match.observe(player)).all()
        checked += 1
        state.apply_action(int(rng.choice(state.legal_actions())))
    assert checked > 20
    assert sum(state.returns()) == pytest.approx(0.0)


def test_an_openspiel_clone_and_a_resampled_state_keep_the_history(pyspiel) -> None:  # type: ignore[no-untyped-def]
    game = pyspiel.load_game("python_rami_tallage")
    rng = random.Random(1)
    state = game.new_initial_state()
    for _ in range(200):
        if state.is_chance_node():
            state.apply_action(rng.choice([o for o, _ in state.chance_outcomes()]))
        else:
            state.apply_action(rng.choice(state.legal_actions()))
    history = [(t.player, t.action) for t in state.full_history()]
    sampler = pyspiel.UniformProbabilitySampler(0.0, 1.0)
    for other in (state.clone(), state.resample_from_infostate(state.current_player(), sampler)):
        assert [(t.player, t.action) for t in other.full_history()] == history
        assert other.move_number() == state.move_number() == 200
        assert other.current_player() == state.current_player()
    copy = state.clone()
    assert str(copy) == str(state) and copy.legal_actions() == state.legal_actions()
    copy.apply_action(copy.legal_actions()[0])  # the copy goes on alone
    assert len(state.history()) == 200 and len(copy.history()) == 201


def test_openspiels_ismcts_bot_plays_a_round(pyspiel) -> None:  # type: ignore[no-untyped-def]
    from open_spiel.python.algorithms import ismcts, mcts

    game = pyspiel.load_game("python_rami_tallage", {"turn_cap": 6})
    bot = ismcts.ISMCTSBot(
        game=game,
        uct_c=2.0,
        evaluator=mcts.RandomRolloutEvaluator(random_state=np.random.RandomState(1)),
        max_simulations=8,
        random_state=np.random.RandomState(2),
    )
    rng = np.random.RandomState(3)
    state = game.new_initial_state()
    moves = 0
    while not state.is_terminal():
        if state.is_chance_node():
            outcomes, probs = zip(*state.chance_outcomes(), strict=True)
            state.apply_action(int(rng.choice(outcomes, p=probs)))
        elif state.current_player() == 0:
            action = bot.step(state)
            assert action in state.legal_actions()
            state.apply_action(action)
            moves += 1
        else:
            state.apply_action(int(rng.choice(state.legal_actions())))
    assert moves >= 3 and sum(state.returns()) == pytest.approx(0.0)


def test_a_seat_env_episode_begins_with_a_decision_of_the_learner() -> None:
    """A game the others end before the learner's first turn (here greedy declares at once,
    portuguese, one round) is not an episode: reset deals the seed's next game instead."""
    e = SeatEnv(variant="portuguese", players=2, opponents="greedy", rounds=1)
    obs, info = e.reset(seed=455)
    assert not e.match.over and obs["action_mask"].any() and info["action_mask"].any()
    again, _ = e.reset(seed=455)  # still one seed, one game
    assert np.array_equal(again["observation"], obs["observation"])


def test_a_seat_env_replays_an_opponents_addition_of_several_cards() -> None:
    """A random opponent's addition of several cards at once (tallage, seed 29: Q♦ K♦ with
    the discard taken) is played as one step per card, and the episode goes on to its end."""
    e = SeatEnv(variant="tallage", players=2, opponents="random", round_cap=1)
    obs, _ = e.reset(seed=29)
    rng = np.random.default_rng(29)
    for _ in range(100_000):
        obs, _, terminated, truncated, _ = e.step(
            int(rng.choice(np.flatnonzero(obs["action_mask"])))
        )
        if terminated or truncated:
            break
    assert e.match.over


def test_a_false_declarations_cards_are_known_to_every_other_seat() -> None:
    """Portuguese: a false declaration shows the 13 cards to everyone, and they stay in the
    hand: the others' observations hold them among the cards that seat is known to hold."""
    rng = random.Random(3)
    for seed in range(100):
        m = Match("portuguese", players=2, seed=seed)
        while m.game.phase in (Phase.DRAW, Phase.PLAY):
            steps = m.legal()
            declares = [i for i in steps if m.space.steps[i].kind == "declare"]
            pick = rng.choice(declares) if declares and rng.random() < 0.2 else rng.choice(steps)
            events, _ = m.play(pick)
            shown = [e for e in events if isinstance(e, Declared) and not e.complete]
            if shown:
                seat = shown[0].seat
                assert sorted(m.known[seat].elements()) == sorted(int(c) for c in shown[0].cards)
                assert m.observe(1 - seat)[m.layout.slice("known")].sum() > 0
                # The card declared with went face up to the pile, as the pile shows.
                assert m.pile == [int(c) for c in m.game.discard]
                return
    pytest.fail("no false declaration in 100 random rounds")


def test_portuguese_totals_are_told_apart_beyond_twice_a_target_it_has_not() -> None:
    """Portuguese ends after its rounds, not at a target: its totals are scaled by 100 points
    a round, so that 400 and 800 points (a declaration's x4 makes such totals) differ."""
    m = Match("portuguese", players=2, seed=1, rounds=5)
    seen = []
    for total in (400, 800):
        m.game.totals[1] = total
        seen.append(float(m.observe(0)[m.layout.slice("totals")][1]))
    assert seen == [pytest.approx(0.8), pytest.approx(1.6)]


def test_a_step_that_is_not_an_integer_is_refused_and_changes_nothing() -> None:
    e = raw_env(variant="simple")
    e.reset(seed=1)
    agent = e.agent_selection
    legal = int(np.flatnonzero(e.observe(agent)["action_mask"])[0])

    def seen() -> tuple[object, ...]:
        return e.match.game.state_key(), e.observe(agent)["observation"].tobytes(), e.rewards

    before = seen()
    for bad in (legal + 0.7, float(legal), True, "3", np.float32(legal), np.array(float(legal))):
        with pytest.raises(TypeError, match="a step is an integer from 0 to"):
            e.step(bad)  # type: ignore[arg-type]
        assert seen() == before
    e.step(np.array(legal))  # numpy's integers are integers, a 0-d array of one too
    assert seen() != before
    with pytest.raises(TypeError, match="a step is an integer"):
        e.step(np.array([legal]))  # type: ignore[arg-type]
    seat = SeatEnv(variant="simple")
    obs, _ = seat.reset(seed=1)
    with pytest.raises(TypeError, match="a step is an integer"):
        seat.step(int(np.flatnonzero(obs["action_mask"])[0]) + 0.5)  # type: ignore[arg-type]


def test_the_aec_state_is_every_seats_observation_together() -> None:
    e = raw_env(variant="tallage", players=3)
    e.reset(seed=2)
    rng = random.Random(2)
    for _ in range(40):
        state = e.state()
        assert e.state_space.contains(state)
        parts = np.split(state, 3)
        for seat, agent in enumerate(e.possible_agents):
            assert np.array_equal(parts[seat], e.observe(agent)["observation"])
        mask = e.observe(e.agent_selection)["action_mask"]
        e.step(int(rng.choice(np.flatnonzero(mask))))


# -- found by a researcher's first try of the environments ----------------------------------


@pytest.mark.parametrize(
    ("variant", "options", "said"),
    [
        ("tallage", {"rounds": 1}, "tallage has no option rounds"),
        ("simple", {"rounds": 1}, "simple has no option rounds"),
        ("portuguese", {"round_cap": 1}, "portuguese has no option round_cap"),
        ("tallage", {"false_declaration": "reject"}, "tallage has no option false_declaration"),
        ("tallage", {"bogus": 1}, "unknown option 'bogus'"),
        ("tallage", {"round_cap": 0}, "option round_cap must be an integer from 1"),
        # A value no game takes, of an option the variant has not: the option is said.
        ("portuguese", {"target": 100}, "portuguese has no option target"),
    ],
)
def test_an_option_the_variant_does_not_have_is_refused_as_the_server_refuses_it(
    variant: str, options: dict[str, object], said: str
) -> None:
    """``rounds=1`` (the docs' advice for short games) was taken by tallage and simple and
    ignored: a whole game was played. Every environment now refuses it, as a table does."""
    for make in (env, raw_env, SeatEnv, Match):
        with pytest.raises(ValueError, match=said):
            make(variant=variant, **options)


def test_human_rendering_prints_and_returns_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    from pettingzoo.test import render_test

    def made(render_mode: str | None = None):  # type: ignore[no-untyped-def]
        return env(variant="simple", round_cap=1, render_mode=render_mode)

    render_test(made)
    seat = SeatEnv(variant="simple", round_cap=1, render_mode="human")
    seat.reset(seed=1)
    capsys.readouterr()
    assert seat.render() is None
    assert capsys.readouterr().out.startswith("simple round 1")


def test_a_seat_env_refuses_a_step_before_reset_and_a_reward_that_is_no_number() -> None:
    seat = SeatEnv(variant="simple")
    with pytest.raises(RuntimeError, match="reset"):
        seat.step(0)
    with pytest.raises(TypeError, match="illegal_reward is a number"):
        SeatEnv(variant="simple", illegal_reward="x")  # type: ignore[arg-type]
    assert SeatEnv(variant="simple", illegal_reward=np.float32(-2)).illegal_reward == -2.0
    obs, _ = seat.reset(seed=1)
    illegal = int(np.flatnonzero(obs["action_mask"] == 0)[0])
    obs, reward, terminated, truncated, info = seat.step(illegal)
    assert (reward, terminated, truncated, info["illegal"]) == (-1.0, True, False, True)
    # The episode is over: nothing is legal any more, as at a game's end.
    assert not obs["action_mask"].any() and not info["action_mask"].any()


def _played(pyspiel, name: str, params: dict[str, object], moves: int, seed: int = 0):  # type: ignore[no-untyped-def]
    game = pyspiel.load_game(name, params)
    state = game.new_initial_state()
    rng = random.Random(seed)
    for _ in range(moves):
        if state.is_terminal():
            break
        if state.is_chance_node():
            outcomes, probs = zip(*state.chance_outcomes(), strict=True)
            state.apply_action(rng.choices(outcomes, probs)[0])
        else:
            state.apply_action(rng.choice(state.legal_actions()))
    return game, state


def test_openspiel_games_take_the_options_of_a_round(pyspiel) -> None:  # type: ignore[no-untyped-def]
    game = pyspiel.load_game("python_rami_tallage", {"players": 3, "jokers_per_meld": 2})
    state = game.new_initial_state()
    assert game.get_parameters()["jokers_per_meld"] == 2
    assert state._spec.template.options.jokers_per_meld == 2
    game, state = _played(pyspiel, "python_rami_tallage", {"opening": 51}, 80)
    assert state.match.options.opening == 51 and state.match.game.options.opening == 51
    pyspiel.load_game("python_rami_portuguese", {"false_declaration": "reject"})
    pyspiel.load_game("python_rami_simple", {"simple_rami_sec": True, "stock_rebuilds": 0})
    with pytest.raises(pyspiel.SpielError, match="false_declaration"):
        pyspiel.load_game("python_rami_tallage", {"false_declaration": "reject"})
    with pytest.raises(ValueError, match="option opening must be one of 71, 51"):
        pyspiel.load_game("python_rami_tallage", {"opening": 60})


def test_an_openspiel_state_serializes_as_its_history(pyspiel) -> None:  # type: ignore[no-untyped-def]
    """It was a pickle of the whole state (620 KB, and unpickling a string runs what it
    says); a refusal of an illegal action quoted all of it."""
    game, state = _played(pyspiel, "python_rami_tallage", {"players": 2}, 300)
    text = state.serialize()
    assert len(text) < 4 * len(state.history()) + 100, len(text)
    assert "__dict__" not in text
    import pickle

    pickled = pickle.dumps(state)
    assert len(pickled) < 4 * len(text) + 1000, len(pickled)
    for again in (game.deserialize_state(text), pickle.loads(pickled)):
        _same_state(again, state)
    illegal = next(a for a in range(game.num_distinct_actions()) if a not in state.legal_actions())
    with pytest.raises(pyspiel.SpielError) as refused:
        state.apply_action_with_legality_check(illegal)
    assert len(str(refused.value)) < 10_000
    game = pyspiel.load_game("python_rami_portuguese", {"turn_cap": 20})
    pyspiel.random_sim_test(game, num_sims=1, serialize=True, verbose=False)


def test_a_resampled_openspiel_state_serializes_as_itself_not_as_its_history(pyspiel) -> None:  # type: ignore[no-untyped-def]
    """A resampled state keeps the true state's history with other cards: written as its
    history, it came back as the true deal (the hidden cards, in a worker process)."""
    import pickle

    game, state = _played(pyspiel, "python_rami_tallage", {"players": 2}, 200)
    sampler = pyspiel.UniformProbabilitySampler(0.0, 1.0)
    other = state.resample_from_infostate(state.current_player(), sampler)
    assert str(other) != str(state)
    for again in (pickle.loads(pickle.dumps(other)), game.deserialize_state(other.serialize())):
        assert str(again) == str(other) and again.history() == other.history()
        assert again.legal_actions() == other.legal_actions()


def _same_state(again, state) -> None:  # type: ignore[no-untyped-def]
    assert again.history() == state.history()
    assert str(again) == str(state) and again.legal_actions() == state.legal_actions()
    for p in range(2):
        assert again.information_state_string(p) == state.information_state_string(p)
        assert again.observation_tensor(p) == state.observation_tensor(p)


def test_an_openspiel_game_pickles(pyspiel) -> None:  # type: ignore[no-untyped-def]
    import pickle

    for variant in VARIANTS:
        game = pyspiel.load_game(f"python_rami_{variant}", {"players": 3})
        again = pickle.loads(pickle.dumps(game))
        assert again.get_parameters() == game.get_parameters()
        assert again.num_distinct_actions() == game.num_distinct_actions()


def test_openspiel_gives_no_information_state_tensor_in_place_of_one(pyspiel) -> None:  # type: ignore[no-untyped-def]
    """The game has no information-state tensor: asking for one got the observation tensor,
    silently, so a perfect-recall algorithm learned from less than it was told."""
    from open_spiel.python.observation import make_observation

    game, state = _played(pyspiel, "python_rami_simple", {}, 120)
    assert not game.get_type().provides_information_state_tensor
    with pytest.raises((pyspiel.SpielError, RuntimeError, ValueError)):
        state.information_state_tensor(0)
    recall = make_observation(game, pyspiel.IIGObservationType(perfect_recall=True))
    assert recall.string_from(state, 0) == state.information_state_string(0)


def test_gymnasium_makes_the_seat_env_by_its_id() -> None:
    import gymnasium as gym

    e = gym.make("rami/Seat-v0", variant="simple", round_cap=1, opponents="random")
    obs, _ = e.reset(seed=3)
    assert e.unwrapped.spec is not None and e.unwrapped.spec.id == "rami/Seat-v0"
    assert isinstance(e.unwrapped, SeatEnv) and obs["action_mask"].any()
    e.step(int(np.flatnonzero(obs["action_mask"])[0]))


def test_an_unseeded_reset_deals_seed_0_first_then_the_next_deals_of_the_last_seed() -> None:
    """As docs/rl.md says: the first reset without a seed deals what seed 0 deals; a reset
    without a seed after one with it deals that seed's next deal."""

    def hands(e: raw_env) -> list[str]:
        return [" ".join(map(str, h)) for h in e.match.game.hands]

    unseeded, seeded = raw_env("tallage", 2), raw_env("tallage", 2)
    unseeded.reset()
    seeded.reset(seed=0)
    assert hands(unseeded) == hands(seeded)
    unseeded.reset(seed=5)
    first = hands(unseeded)
    unseeded.reset()
    assert hands(unseeded) != first


def test_human_rendering_prints_the_table_once_a_step_in_both_environments(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``raw_env`` printed ``None`` under the table after each step, and ``SeatEnv`` printed
    nothing on a step, where Gymnasium's "human" renders during ``step``."""
    e = raw_env(variant="simple", round_cap=1, render_mode="human")
    e.reset(seed=1)
    capsys.readouterr()
    e.step(int(np.flatnonzero(e.observe(e.agent_selection)["action_mask"])[0]))
    out = capsys.readouterr().out
    assert out.startswith("simple round 1") and out.count("simple round 1") == 1
    assert "None" not in out
    seat = SeatEnv(variant="simple", round_cap=1, render_mode="human")
    _, info = seat.reset(seed=1)
    capsys.readouterr()
    seat.step(int(np.flatnonzero(info["action_mask"])[0]))
    assert capsys.readouterr().out.startswith("simple round 1")


def test_a_seed_is_given_to_reset_not_to_the_environment() -> None:
    """``env(seed=5)`` was taken and ignored: the first reset dealt seed 0's cards."""
    for make in (env, raw_env, SeatEnv):
        with pytest.raises(TypeError, match=r"reset\(seed="):
            make(variant="simple", seed=5)


@pytest.mark.parametrize("seed", [1.5, "abc", True, -1])
def test_a_reset_seed_is_a_whole_number(seed: object) -> None:
    """``reset(seed=1.5)`` dealt from "1500004.5", ``"abc"`` failed deep inside, and numpy's
    2**62 overflowed with a warning."""
    e = raw_env(variant="simple")
    with pytest.raises((TypeError, ValueError), match="seed"):
        e.reset(seed=seed)  # type: ignore[arg-type]
    # The Gymnasium environment takes the same seeds (it took True, refused numpy's 7).
    seat = SeatEnv(variant="simple")
    with pytest.raises((TypeError, ValueError), match="seed"):
        seat.reset(seed=seed)  # type: ignore[arg-type]
    seat.reset(seed=np.int64(7))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        e.reset(seed=np.int64(2**62))
    e.reset(seed=np.int64(7))
    again = raw_env(variant="simple")
    again.reset(seed=7)
    assert (e.observe("player_0")["observation"] == again.observe("player_0")["observation"]).all()


def test_a_turn_cap_of_0_is_refused_every_episode_ends(pyspiel) -> None:  # type: ignore[no-untyped-def]
    """``turn_cap=0`` means no cap to the engine: an environment took it, and OpenSpiel's
    ``max_game_length`` was then 30 for games of thousands of actions."""
    for make in (env, raw_env, SeatEnv, Match):
        with pytest.raises(ValueError, match="turn_cap"):
            make(variant="simple", turn_cap=0)
    with pytest.raises(pyspiel.SpielError, match="turn_cap"):
        pyspiel.load_game("python_rami_tallage", {"turn_cap": 0})


def test_openspiel_refuses_a_card_chance_cannot_draw_and_a_seat_that_is_not_one(pyspiel) -> None:  # type: ignore[no-untyped-def]
    """Drawing a card not in the stock said "max() arg is an empty sequence"; the
    information state of the chance player (-1) was seat n-1's hand under the name p-1."""
    game = pyspiel.load_game("python_rami_portuguese", {"turn_cap": 20})
    state = game.new_initial_state()
    while state.is_chance_node() and not state.is_terminal():
        state.apply_action(state.legal_actions()[0])
    if not state.is_chance_node():
        state.apply_action(0)  # the draw from the stock: chance picks the card
    assert state.is_chance_node()
    missing = next(c for c in range(game.num_distinct_actions()) if c not in state.legal_actions())
    with pytest.raises(pyspiel.SpielError, match="not in the stock"):
        state.apply_action(missing)
    with pytest.raises(pyspiel.SpielError, match="seat"):
        state.information_state_string()
    with pytest.raises(pyspiel.SpielError, match="seat"):
        state.information_state_string(5)
    with pytest.raises(pyspiel.SpielError, match="seat"):
        state.observation_string(-1)
