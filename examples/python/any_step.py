"""Any step: the simplest legal Rami bot, on the bare contract (no engine, no bot kit).

On its turn it asks the server for its legal next steps (``TableService.LegalSteps``) and takes
one at random: a step that only stages (a meld to lay, a card to add) goes into the list it
sends next time; a step that ends the move is sent with them in ``Act``'s ``steps``. Every step
the server lists is legal, so every move is (it leaves out only the portuguese declarations
marked ``false_declaration``: legal where false ones are revealed, and a lost round)::

    python examples/python/any_step.py localhost:50051 TABLE_ID [--seed N]

Three things every bot does, here in a few lines each: it acts only in a playing phase (a
waiting table's view names a turn too); it plays the seat its view names (``view.seat``: seats
are numbered again at the start when some stayed empty); and when the server says it sends too
fast (``RESOURCE_EXHAUSTED``), it waits the ``retry_after_ms`` the refusal gives and sends the
same command again.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable
from typing import TypeVar

import grpc
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from rami.v1 import game_pb2, lobby_service_pb2, lobby_service_pb2_grpc, table_service_pb2_grpc
from rami.v1 import table_service_pb2 as ts

T = TypeVar("T")
PLAYING = (game_pb2.PHASE_DRAW, game_pb2.PHASE_PLAY)


def patiently(rpc: Callable[..., T], request: object, token: tuple[tuple[str, str], ...]) -> T:
    """``rpc(request)``; refused for sending too fast, wait what the server says, and again."""
    while True:
        try:
            return rpc(request, metadata=token)
        except grpc.RpcError as e:
            if e.code() != grpc.StatusCode.RESOURCE_EXHAUSTED:
                raise
            wait_ms = 1000
            status = rpc_status.from_call(e)  # the ErrorInfo detail: reason and metadata
            for detail in status.details if status else ():
                info = error_details_pb2.ErrorInfo()
                if detail.Unpack(info) and "retry_after_ms" in info.metadata:
                    wait_ms = int(info.metadata["retry_after_ms"])
            time.sleep(wait_ms / 1000)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("target")
    parser.add_argument("table_id")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    with grpc.insecure_channel(args.target) as channel:
        lobby = lobby_service_pb2_grpc.LobbyServiceStub(channel)
        table = table_service_pb2_grpc.TableServiceStub(channel)
        joined = lobby.JoinTable(
            lobby_service_pb2.JoinTableRequest(table_id=args.table_id, name="Any step")
        )
        token = (("rami-token", joined.token),)
        seat, moves = joined.seat, 0
        for msg in table.Watch(ts.WatchRequest(table_id=args.table_id), metadata=token):
            if not msg.HasField("update"):
                continue  # a heartbeat, or a chat line
            view = msg.update.view
            seat = view.seat
            if view.phase == game_pb2.PHASE_GAME_OVER:
                break
            if view.phase not in PLAYING or view.turn != view.seat:
                continue
            number, staged = msg.update.number, []
            try:
                while True:
                    request = ts.LegalStepsRequest(
                        table_id=args.table_id, number=number, staged=staged
                    )
                    listed = patiently(table.LegalSteps, request, token).steps
                    legal = [s for s in listed if not s.false_declaration]
                    if not legal:
                        break  # not our turn (any more)
                    step = rng.choice(legal)
                    staged.append(step.index)
                    if step.ends_move:
                        act = ts.ActRequest(
                            table_id=args.table_id,
                            number=number,
                            steps=ts.StepsAction(steps=staged),
                        )
                        patiently(table.Act, act, token)
                        moves += 1
                        break
            except grpc.RpcError as e:
                if e.code() != grpc.StatusCode.ABORTED:
                    raise
                # STALE: this update was already behind (we moved since): wait for the next.
        print(f"any step: seat {seat}: {moves} moves; game over")


if __name__ == "__main__":
    main()
