"""How the client words what the server answered, or that it did not answer."""

from __future__ import annotations

import grpc
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2  # type: ignore[import-untyped]

from rami.client.link import Answered, Unreachable, next_first, plain_error


def _answered(code: grpc.StatusCode, message: str, reason: str) -> grpc.aio.AioRpcError:
    """A refusal as the server sends it: its status, with an ErrorInfo naming the reason."""
    detail = any_pb2.Any()
    detail.Pack(error_details_pb2.ErrorInfo(reason=reason, domain="rami.v1"))
    status = status_pb2.Status(code=code.value[0], message=message, details=[detail])
    trailing = grpc.aio.Metadata(("grpc-status-details-bin", status.SerializeToString()))
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), trailing, message)


def test_a_server_whose_store_is_out_of_reach_is_not_said_to_be_out_of_reach() -> None:
    # The server answered (its database is down): the player is told what it said, not that
    # the server can't be reached (an operator looked for a dead server that was up).
    said = "the table store is out of reach for now: call again shortly"
    error = plain_error(_answered(grpc.StatusCode.UNAVAILABLE, said, "STORAGE_FAILED"), "h:1")
    assert isinstance(error, Answered)  # its words say whether the call was made
    assert isinstance(error, Unreachable)  # still a moment's trouble: tried again the same way
    assert str(error) == f"the server at h:1 answered that {said}"
    # No answer at all: the server can't be reached.
    silent = grpc.aio.AioRpcError(
        grpc.StatusCode.UNAVAILABLE, grpc.aio.Metadata(), grpc.aio.Metadata(), "Socket closed"
    )
    assert str(plain_error(silent, "h:1")) == "the server at h:1 can't be reached right now"


def test_a_list_of_servers_is_called_from_its_next_one_and_a_single_server_is_not() -> None:
    """The list a channel is given, its first server put last (a server of the list that
    cannot serve the table: see ``Route.destination``); a target of one server, or a name a
    resolver spreads, has no next."""
    assert next_first("ipv4:10.0.0.1:50051,10.0.0.2:50051,10.0.0.3:1") == (
        "ipv4:10.0.0.2:50051,10.0.0.3:1,10.0.0.1:50051"
    )
    assert next_first("ipv6:[::1]:50051,[::2]:50051") == "ipv6:[::2]:50051,[::1]:50051"
    for one in ("ipv4:10.0.0.1:50051", "localhost:50051", "dns:///rami.example:50051", "a,b"):
        assert next_first(one) is None, one
