"""Standard health checking and server reflection, as generic gRPC clients use them; and the
stateless RulesService: the variants, meld checks and hand analysis."""

from __future__ import annotations

import queue
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from google.protobuf import descriptor_pb2
from google.protobuf.descriptor_pool import DescriptorPool
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)
from server_support import DOMAIN, RPC_TIMEOUT, VARIANTS, cards, error_of, rami_server

from rami.server.testing import ServerThread, Stubs
from rami.v1 import game_pb2, rules_service_pb2

T = RPC_TIMEOUT
SERVICES = ("rami.v1.RulesService", "rami.v1.LobbyService", "rami.v1.TableService")
REFLECTIONS = ("grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection")
SERVING = health_pb2.HealthCheckResponse.SERVING
BUF = Path(__file__).resolve().parents[2] / "tools" / "node_modules" / ".bin" / "buf"


def test_health_check_answers_serving(server: ServerThread, stubs: Stubs) -> None:
    health = health_pb2_grpc.HealthStub(stubs.channel)
    for service in ("", *SERVICES):
        resp = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=T)
        assert resp.status == health_pb2.HealthCheckResponse.SERVING, service
    with pytest.raises(grpc.RpcError) as info:
        health.Check(health_pb2.HealthCheckRequest(service="no.such.Service"), timeout=T)
    assert info.value.code() == grpc.StatusCode.NOT_FOUND
    watch = health.Watch(health_pb2.HealthCheckRequest(service="rami.v1.TableService"), timeout=T)
    try:
        assert next(watch).status == health_pb2.HealthCheckResponse.SERVING
    finally:
        watch.cancel()


def test_health_answers_check_watch_and_list_for_the_server_and_each_service(
    stubs: Stubs,
) -> None:
    health = health_pb2_grpc.HealthStub(stubs.channel)
    listed = health.List(health_pb2.HealthListRequest(), timeout=T)
    assert {name: s.status for name, s in listed.statuses.items()} == {
        name: SERVING for name in ("", *SERVICES)
    }
    for service in ("", *SERVICES):
        request = health_pb2.HealthCheckRequest(service=service)
        assert health.Check(request, timeout=T).status == SERVING, service
        watch = health.Watch(request, timeout=T)
        try:
            assert next(watch).status == SERVING, service
        finally:
            watch.cancel()
    unknown = health.Watch(health_pb2.HealthCheckRequest(service="no.such.Service"), timeout=T)
    try:
        assert next(unknown).status == health_pb2.HealthCheckResponse.SERVICE_UNKNOWN
    finally:
        unknown.cancel()


def test_the_server_keeps_no_channelz_records(tmp_path: Path) -> None:
    """gRPC's channelz, on by default, keeps a record of every server, connection and call
    count for a channelz service, which this server does not offer: off, it saves some 1 KB a
    connection (docs/performance.md, 6b)."""
    import json

    from grpc._cython import cygrpc

    def servers() -> int:
        return len(json.loads(cygrpc.channelz_get_servers(0)).get("server", []))

    before = servers()
    srv = ServerThread(str(tmp_path / "rami.db")).start()
    try:
        with Stubs(srv.target) as stubs:
            stubs.rules.ListVariants(rules_service_pb2.ListVariantsRequest(), timeout=T)
            assert servers() == before
    finally:
        srv.stop()


def test_health_list_follows_every_status_change(tmp_path: Path) -> None:
    srv = ServerThread(str(tmp_path / "rami.db")).start()
    try:
        assert srv.server is not None
        server = srv.server
        with Stubs(srv.target) as stubs:
            health = health_pb2_grpc.HealthStub(stubs.channel)
            # What stop() tells everyone first, before it refuses new calls.
            for name in ("", *SERVICES):
                srv.call(server.health.set(name, health_pb2.HealthCheckResponse.NOT_SERVING))
            listed = health.List(health_pb2.HealthListRequest(), timeout=T)
            assert {s.status for s in listed.statuses.values()} == {
                health_pb2.HealthCheckResponse.NOT_SERVING
            }
            assert set(listed.statuses) == {"", *SERVICES}
    finally:
        srv.stop()


def test_health_watch_and_reflection_streams_are_bounded_per_client_address(
    tmp_path: Path,
) -> None:
    """A Watch or a reflection stream holds the server's memory while it is open, and an
    open stream keeps its connection from ever being idle: one client address may hold only
    so many of each (here 3); one that ends makes room for another."""
    with (
        ServerThread(str(tmp_path / "rami.db"), introspection_streams_per_client=3) as srv,
        Stubs(srv.target) as stubs,
    ):
        health = health_pb2_grpc.HealthStub(stubs.channel)
        request = health_pb2.HealthCheckRequest(service="")
        watches = [health.Watch(request, timeout=T) for _ in range(3)]
        for w in watches:
            assert next(w).status == SERVING
        extra = health.Watch(request, timeout=T)
        with pytest.raises(grpc.RpcError) as info:
            next(extra)
        refused = error_of(info.value)
        assert (refused.code, refused.reason) == (
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            "TOO_MANY_STREAMS",
        )
        # Check is a call, not a stream: never bounded so.
        assert health.Check(request, timeout=T).status == SERVING
        watches.pop().cancel()
        for _ in range(50):  # the server sees the cancel a moment later
            again = health.Watch(request, timeout=T)
            try:
                assert next(again).status == SERVING
                break
            except grpc.RpcError:
                time.sleep(0.05)
        else:
            raise AssertionError("an ended Watch made no room for another")
        watches.append(again)

        # Reflection: v1 and v1alpha count together (one service under two names).
        def stream(version: str) -> tuple[queue.SimpleQueue[object], object]:
            requests: queue.SimpleQueue[object] = queue.SimpleQueue()
            info = stubs.channel.stream_stream(
                f"/grpc.reflection.{version}.ServerReflection/ServerReflectionInfo",
                request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
                response_deserializer=reflection_pb2.ServerReflectionResponse.FromString,
            )
            answers = info(iter(requests.get, None), timeout=T)
            requests.put(reflection_pb2.ServerReflectionRequest(list_services=""))
            return requests, answers

        held = [stream(v) for v in ("v1", "v1alpha", "v1")]
        for _, answers in held:
            assert next(answers).list_services_response.service  # type: ignore[call-overload]
        _, over = stream("v1alpha")
        with pytest.raises(grpc.RpcError) as info:
            next(over)  # type: ignore[call-overload]
        assert error_of(info.value).reason == "TOO_MANY_STREAMS"
        for requests, _ in held:
            requests.put(None)  # the client ends its stream
        for w in watches:
            w.cancel()


def _reflect(
    stubs: Stubs, version: str = "v1alpha", **request: object
) -> reflection_pb2.ServerReflectionResponse:
    """One request to the reflection service ``version`` (v1 and v1alpha have the same messages
    on the wire, only the service's name differs)."""
    info = stubs.channel.stream_stream(
        f"/grpc.reflection.{version}.ServerReflection/ServerReflectionInfo",
        request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
        response_deserializer=reflection_pb2.ServerReflectionResponse.FromString,
    )
    responses = info(iter([reflection_pb2.ServerReflectionRequest(**request)]), timeout=T)
    return next(iter(responses))


@pytest.mark.parametrize("version", ["v1", "v1alpha"])
def test_reflection_v1_and_v1alpha_list_every_service_and_resolve_files(
    stubs: Stubs, version: str
) -> None:
    listed = _reflect(stubs, version, list_services="")
    names = {s.name for s in listed.list_services_response.service}
    assert names == {*SERVICES, "grpc.health.v1.Health", *REFLECTIONS}
    for name in sorted(names):
        found = _reflect(stubs, version, file_containing_symbol=name)
        files = [
            descriptor_pb2.FileDescriptorProto.FromString(raw)
            for raw in found.file_descriptor_response.file_descriptor_proto
        ]
        package, service = name.rsplit(".", 1)
        assert any(
            f.package == package and any(s.name == service for s in f.service) for f in files
        ), (name, found)
    by_name = _reflect(stubs, version, file_by_filename="rami/v1/table_service.proto")
    (table, *imports) = [
        descriptor_pb2.FileDescriptorProto.FromString(raw)
        for raw in by_name.file_descriptor_response.file_descriptor_proto
    ]
    assert table.name == "rami/v1/table_service.proto"
    assert set(table.dependency) <= {f.name for f in imports}
    reasons = _reflect(stubs, version, file_containing_symbol="rami.v1.ErrorReason")
    (errors,) = [
        descriptor_pb2.FileDescriptorProto.FromString(raw)
        for raw in reasons.file_descriptor_response.file_descriptor_proto
    ]
    assert errors.name == "rami/v1/errors.proto" and errors.enum_type[0].name == "ErrorReason"
    missing = _reflect(stubs, version, file_containing_symbol="rami.v1.NoSuchThing")
    assert missing.error_response.error_code == grpc.StatusCode.NOT_FOUND.value[0]


def test_reflection_lists_the_services_and_describes_them(stubs: Stubs) -> None:
    listed = _reflect(stubs, list_services="")
    names = {s.name for s in listed.list_services_response.service}
    assert {*SERVICES, "grpc.health.v1.Health"} <= names
    assert "grpc.reflection.v1alpha.ServerReflection" in names

    found = _reflect(stubs, file_containing_symbol="rami.v1.TableService")
    files = [
        descriptor_pb2.FileDescriptorProto.FromString(raw)
        for raw in found.file_descriptor_response.file_descriptor_proto
    ]
    assert files, found
    table = next(f for f in files if any(s.name == "TableService" for s in f.service))
    assert table.package == "rami.v1" and table.name == "rami/v1/table_service.proto"
    methods = {m.name: m for s in table.service for m in s.method}
    assert {"Act", "Chat", "AnalyseMyHand", "ExportRecord", "Watch"} <= set(methods)
    assert methods["Watch"].server_streaming and not methods["Act"].server_streaming

    missing = _reflect(stubs, file_containing_symbol="rami.v1.NoSuchThing")
    assert missing.error_response.error_code == grpc.StatusCode.NOT_FOUND.value[0]


def test_a_generic_client_builds_every_service_from_reflection(stubs: Stubs) -> None:
    # What grpcurl and friends do: fetch descriptors (with their imports) and resolve by name.
    pool = DescriptorPool(ProtoReflectionDescriptorDatabase(stubs.channel))
    for name in SERVICES:
        service = pool.FindServiceByName(name)
        assert service.methods, name
    act = pool.FindServiceByName("rami.v1.TableService").methods_by_name["Act"]
    assert act.input_type.full_name == "rami.v1.ActRequest"
    view = pool.FindMessageTypeByName("rami.v1.View")
    assert view.fields_by_name["turn_deadline"].message_type.full_name == (
        "google.protobuf.Timestamp"
    )
    assert pool.FindEnumTypeByName("rami.v1.Card").values_by_name["CARD_JOKER"].number == 53


@pytest.fixture
def logged_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """``rami-server`` at info level: its address and its log."""
    log = tmp_path / "server.log"
    with rami_server(tmp_path / "rami.db", log, log_level="info") as (_, address):
        yield address, log


def _raw(channel: grpc.Channel, kind: str, method: str, data: bytes) -> grpc.StatusCode:
    """Send ``data`` as the request of ``method`` and read the answer to its end: its code."""
    try:
        if kind == "unary":
            channel.unary_unary(method)(data, timeout=T)
        elif kind == "server_stream":
            for _ in channel.unary_stream(method)(data, timeout=T):
                break  # a health watch would go on: its first answer will do
        else:
            list(channel.stream_stream(method)(iter([data]), timeout=T))
    except grpc.RpcError as e:
        return e.code()
    return grpc.StatusCode.OK


def test_generic_tools_meet_no_traceback_in_the_servers_log(
    logged_server: tuple[str, Path],
) -> None:
    """What grpcurl, buf curl and grpc-health-probe send, and what they send by mistake: every
    call is answered with a status, and the server logs no error for any."""
    address, log = logged_server
    health = "/grpc.health.v1.Health/"
    reflection = [f"/{name}/ServerReflectionInfo" for name in REFLECTIONS]
    check = health_pb2.HealthCheckRequest(service="rami.v1.TableService").SerializeToString()
    listing = reflection_pb2.ServerReflectionRequest(list_services="").SerializeToString()
    garbage = b"\xff\xff\xff"
    calls = [
        ("unary", health + "Check", check, grpc.StatusCode.OK),
        ("server_stream", health + "Watch", check, grpc.StatusCode.OK),
        ("unary", health + "List", b"", grpc.StatusCode.OK),
        *(("bidi", method, listing, grpc.StatusCode.OK) for method in reflection),
        # Methods that no service has: gRPC's own UNIMPLEMENTED.
        ("unary", health + "NoSuchMethod", b"", grpc.StatusCode.UNIMPLEMENTED),
        ("unary", "/rami.v1.TableService/NoSuchMethod", b"", grpc.StatusCode.UNIMPLEMENTED),
        ("unary", "/no.such.Service/Method", b"", grpc.StatusCode.UNIMPLEMENTED),
        (
            "bidi",
            "/grpc.reflection.v9.ServerReflection/ServerReflectionInfo",
            listing,
            grpc.StatusCode.UNIMPLEMENTED,
        ),
        # Bytes that are no message of the method: INVALID_ARGUMENT, as on the game's services.
        ("unary", health + "Check", garbage, grpc.StatusCode.INVALID_ARGUMENT),
        ("server_stream", health + "Watch", garbage, grpc.StatusCode.INVALID_ARGUMENT),
        ("unary", health + "List", garbage, grpc.StatusCode.INVALID_ARGUMENT),
        *(("bidi", method, garbage, grpc.StatusCode.INVALID_ARGUMENT) for method in reflection),
    ]
    with grpc.insecure_channel(address) as channel:
        answered = [(method, _raw(channel, kind, method, data)) for kind, method, data, _ in calls]
        assert answered == [(method, code) for _, method, _, code in calls]
        # Still serving, and the log is read after a last call it answered.
        stub = health_pb2_grpc.HealthStub(channel)
        assert stub.Check(health_pb2.HealthCheckRequest(), timeout=T).status == SERVING
    text = log.read_text()
    assert "listening on" in text, text
    assert " ERROR " not in text and "Traceback" not in text, text[-3000:]


def _buf_curl(address: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BUF), "curl", "--protocol", "grpc", "--http2-prior-knowledge", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.skipif(not BUF.exists() or shutil.which("node") is None, reason="`make buf` first")
def test_buf_curl_lists_every_method_by_reflection_v1_and_v1alpha_and_calls_health(
    logged_server: tuple[str, Path],
) -> None:
    address, log = logged_server
    url = f"http://{address}"
    methods = {
        f"{m.containing_service.full_name}/{m.name}"
        for module in (rules_service_pb2,)
        for m in module.DESCRIPTOR.services_by_name["RulesService"].methods
    }
    for protocol in ("grpc-v1", "grpc-v1alpha"):
        done = _buf_curl(address, "--list-methods", "--reflect-protocol", protocol, url)
        assert done.returncode == 0, (protocol, done.stderr)
        listed = set(done.stdout.split())
        assert methods <= listed, (protocol, listed)
        assert {"grpc.health.v1.Health/List", "rami.v1.TableService/Play"} <= listed, listed
        assert {f"{name}/ServerReflectionInfo" for name in REFLECTIONS} <= listed, listed
    for method, answer in (("List", '"statuses"'), ("Check", '"SERVING"')):
        done = _buf_curl(address, "--data", "{}", f"{url}/grpc.health.v1.Health/{method}")
        assert done.returncode == 0 and answer in done.stdout, (method, done.stdout, done.stderr)
    text = log.read_text()
    assert " ERROR " not in text and "Traceback" not in text, text[-3000:]


# -- RulesService ----------------------------------------------------------------------------


def test_list_variants_lists_the_three_games_with_their_options(stubs: Stubs) -> None:
    resp = stubs.rules.ListVariants(rules_service_pb2.ListVariantsRequest(), timeout=T)
    by_id = {v.id: v for v in resp.variants}
    assert set(by_id) == {"portuguese", "tallage", "simple"}
    for vid, v in by_id.items():
        assert v.variant == VARIANTS[vid] and v.title
    facts = {vid: (v.deck_size, v.jokers, v.hand_size, v.dealer_extra) for vid, v in by_id.items()}
    assert facts == {
        "portuguese": (106, 2, 13, 0),
        "tallage": (108, 4, 14, 1),
        "simple": (108, 4, 13, 1),
    }
    options = {vid: {o.name: o for o in v.options} for vid, v in by_id.items()}
    assert {"rounds", "false_declaration"} <= set(options["portuguese"])
    assert not {"target", "opening", "joker_penalty"} & set(options["portuguese"])
    assert {"target", "opening", "joker_penalty", "round_cap"} <= set(options["tallage"])
    assert "opening" not in options["simple"] and "simple_rami_sec" in options["simple"]
    for vid in by_id:
        assert {"players", "jokers_per_meld", "stock_rebuilds", "turn_seconds"} <= set(options[vid])
        for o in options[vid].values():
            assert o.help and o.default_value
            assert o.choices or (o.HasField("min") and o.HasField("max")), o.name
            if o.choices:
                assert o.default_value in o.choices, o.name
            else:
                assert o.min <= int(o.default_value) <= o.max, o.name
    opening = options["tallage"]["opening"]
    assert (opening.default_value, list(opening.choices)) == ("71", ["71", "51"])
    players = options["simple"]["players"]
    assert (players.default_value, players.min, players.max) == ("4", 2, 6)
    assert list(options["portuguese"]["false_declaration"].choices) == ["reveal", "reject"]


def test_list_variants_gives_this_server_s_own_turn_clock_as_the_default(tmp_path: Path) -> None:
    """A server started with a turn clock (``--turn-seconds 3``) gives it to every table whose
    request leaves ``turn_seconds`` unset: ListVariants says so, as that option's default."""
    from rami.v1 import lobby_service_pb2

    with ServerThread(str(tmp_path / "rami.db"), turn_seconds=3) as srv, Stubs(srv.target) as s:
        listed = s.rules.ListVariants(rules_service_pb2.ListVariantsRequest(), timeout=T)
        for v in listed.variants:
            (clock,) = [o for o in v.options if o.name == "turn_seconds"]
            assert clock.default_value == "3", v.id
        made = s.lobby.CreateTable(
            lobby_service_pb2.CreateTableRequest(
                name="clock",
                variant=game_pb2.VARIANT_SIMPLE,
                options=game_pb2.Options(players=2),
            ),
            timeout=T,
        )
        assert made.table.options.turn_seconds == 3


def test_check_meld_says_whether_cards_make_a_meld(stubs: Stubs) -> None:
    def check(text: str, jokers_as: str = "", jpm: int = 0) -> rules_service_pb2.CheckMeldResponse:
        return stubs.rules.CheckMeld(
            rules_service_pb2.CheckMeldRequest(
                cards=cards(text), jokers_as=cards(jokers_as), jokers_per_meld=jpm
            ),
            timeout=T,
        )

    run = check("7h 8h 9h")
    assert run.valid and run.meld.kind == game_pb2.MELD_KIND_RUN
    assert list(run.meld.cards) == cards("7h 8h 9h") and run.meld.opening_value == 24
    gap = check("7h JK 9h")
    assert gap.valid and list(gap.meld.stands_for) == cards("8h")
    assert gap.meld.opening_value == 0  # a joker makes a meld not clean
    high = check("Qc Kc Ac")
    assert high.valid and high.meld.opening_value == 30
    a_set = check("5c 5d 5s")
    assert a_set.valid and a_set.meld.kind == game_pb2.MELD_KIND_SET
    jokered_set = check("5c 5d JK")
    assert jokered_set.valid and sorted(jokered_set.meld.stands_for) == cards("5h 5s")
    for text in ("7h 8h", "7h 8s 9h", "5c 5c 5d", "7h 9h 10h", "JK JK 5c"):
        resp = check(text)
        assert not resp.valid and resp.reason, text
    assert not check("7h JK JK 10h").valid
    assert check("7h JK JK 10h", jpm=2).valid
    assert check("Ah 2h 3h 4h 5h 6h 7h 8h 9h 10h Jh Qh Kh").valid  # the longest run
    # Does a card fit a full run? Asked with 14 cards (bots do), answered: no.
    full = check("Ah 2h 3h 4h 5h 6h 7h 8h 9h 10h Jh Qh Kh JK")
    assert not full.valid and full.reason

    for request, reason in (
        (
            rules_service_pb2.CheckMeldRequest(cards=cards("7h 8h 9h"), jokers_per_meld=3),
            "BAD_OPTION",
        ),
        (rules_service_pb2.CheckMeldRequest(cards=[*cards("7h 8h"), 0]), "BAD_CARD"),
        (rules_service_pb2.CheckMeldRequest(cards=[*cards("7h 8h"), 60]), "BAD_CARD"),
        (rules_service_pb2.CheckMeldRequest(cards=cards("2h") * 21), "TOO_MANY_CARDS"),
    ):
        with pytest.raises(grpc.RpcError) as info:
            stubs.rules.CheckMeld(request, timeout=T)
        err = error_of(info.value)
        assert (err.code, err.reason, err.domain) == (
            grpc.StatusCode.INVALID_ARGUMENT,
            reason,
            DOMAIN,
        )


def test_analyse_hand_finds_the_best_split(stubs: Stubs) -> None:
    def analyse(variant: str, text: str, bar: int = 0, **options: int) -> game_pb2.Analysis:
        return stubs.rules.AnalyseHand(
            rules_service_pb2.AnalyseHandRequest(
                variant=VARIANTS[variant],
                hand=cards(text),
                bar=bar,
                options=game_pb2.Options(**options),
            ),
            timeout=T,
        ).analysis

    # RULES.md's example: of 3♦4♦5♦ 4♦3♦ only one run can be made; the spare 4 and 3 pay 7.
    seven = analyse("portuguese", "3d 4d 5d 4d 3d Ks Kd Kh 7c 8c 9c 10c Jc")
    assert seven.points_left == 7
    assert sorted(seven.left) == cards("3d 4d")
    assert seven.multiplier == 0 and not seven.declare_cards
    # Fourteen cards, one of which goes face down: a declaration with its multiplier.
    declare = analyse("portuguese", "2h 3h 4h 5h 6h 7h 8h 9h 10h Jh Qh Kh Ah 5c")
    assert list(declare.declare_cards) == cards("5c")
    assert declare.multiplier == 4  # all runs of one suit
    # Tallage: the best opening and whether it opens against a bar.
    hand = "Kc Kd Ks 10s Js Qs Qc Qd Qh 2h 3h 4h 5c 5d 9c"
    opening = analyse("tallage", hand)
    assert opening.opening_value == 99 and opening.can_open  # 30 + 30 + 30 + 9, 5♣5♦9♣ kept
    assert len(opening.opening_melds) == 4
    assert analyse("tallage", hand, bar=98).can_open
    assert not analyse("tallage", hand, bar=99).can_open
    low = analyse("tallage", "2h 3h 4h 5c 5d 5s 9c Jd Ah")
    assert low.opening_value == 25 and not low.can_open  # A♥2♥3♥4♥ (the ace low: 1) + 5s
    # A finish: every card but one laid.
    finish = analyse("simple", "2h 3h 4h 5c 5d 5s 9c 10c Jc Qc Kd Kh Ks 8d")
    assert list(finish.finish_discards) == cards("8d")

    bad = grpc.StatusCode.INVALID_ARGUMENT
    for request, reason in (
        (rules_service_pb2.AnalyseHandRequest(hand=cards("2h 3h 4h")), "BAD_VARIANT"),
        (
            rules_service_pb2.AnalyseHandRequest(
                variant=VARIANTS["tallage"], hand=cards("2h 2h 2h")
            ),
            "BAD_HAND",
        ),
        (
            rules_service_pb2.AnalyseHandRequest(
                variant=VARIANTS["portuguese"], hand=cards("JK JK JK")
            ),
            "BAD_HAND",
        ),
        (
            rules_service_pb2.AnalyseHandRequest(variant=VARIANTS["simple"], hand=cards("2h") * 21),
            "TOO_MANY_CARDS",
        ),
        (rules_service_pb2.AnalyseHandRequest(variant=VARIANTS["simple"], hand=[0]), "BAD_CARD"),
        (
            rules_service_pb2.AnalyseHandRequest(
                variant=VARIANTS["tallage"], options=game_pb2.Options(opening=60)
            ),
            "BAD_OPTION",
        ),
        (
            rules_service_pb2.AnalyseHandRequest(
                variant=VARIANTS["tallage"], hand=cards("3c 4c 5c"), bar=-(2**31)
            ),
            "BAD_OPTION",
        ),
    ):
        with pytest.raises(grpc.RpcError) as info:
            stubs.rules.AnalyseHand(request, timeout=T)
        err = error_of(info.value)
        assert (err.code, err.reason, err.domain) == (bad, reason, DOMAIN), request
