"""Any step: the simplest legal Rami bot, on the bare contract (no engine, no bot kit).

On its turn it asks the server for its legal next steps (``TableService.LegalSteps``) and takes
one at random: a step that only stages (a meld to lay, a card to add) goes into the list it
sends next time; a step that ends the move is sent with them in ``Act``'s ``steps``. Every step
the server lists is legal, so every move is (it leaves out only the portuguese declarations
marked ``false_declaration``: legal where false ones are revealed, and a lost round)::

    python examples/python/any_step.py localhost:50051 TABLE_ID [--seed N]
"""

from __future__ import annotations

import argparse
import random

import grpc

from rami.v1 import game_pb2, lobby_service_pb2, lobby_service_pb2_grpc, table_service_pb2_grpc
from rami.v1 import table_service_pb2 as ts


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
        moves = 0
        for msg in table.Watch(ts.WatchRequest(table_id=args.table_id), metadata=token):
            view = msg.update.view
            if view.phase == game_pb2.PHASE_GAME_OVER:
                break
            if not msg.HasField("update") or view.turn != joined.seat:
                continue
            number, staged = msg.update.number, []
            try:
                while True:
                    listed = table.LegalSteps(
                        ts.LegalStepsRequest(table_id=args.table_id, number=number, staged=staged),
                        metadata=token,
                    ).steps
                    legal = [s for s in listed if not s.false_declaration]
                    if not legal:
                        break  # not our turn (any more)
                    step = rng.choice(legal)
                    staged.append(step.index)
                    if step.ends_move:
                        table.Act(
                            ts.ActRequest(
                                table_id=args.table_id,
                                number=number,
                                steps=ts.StepsAction(steps=staged),
                            ),
                            metadata=token,
                        )
                        moves += 1
                        break
            except grpc.RpcError as e:
                if e.code() != grpc.StatusCode.ABORTED:
                    raise
                # STALE: this update was already behind (we moved since): wait for the next.
        print(f"any step: seat {joined.seat}: {moves} moves; game over")


if __name__ == "__main__":
    main()
