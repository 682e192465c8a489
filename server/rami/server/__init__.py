"""The Rami server: grpc.aio services hosting tables around the engine."""

import os

# gRPC's own log goes to standard error from INFO up by default, whatever --log-level says: a
# line for every plaintext caller of a TLS port, every failed handshake. The server's log
# keeps its errors only, unless GRPC_VERBOSITY says otherwise; it must be set before gRPC is
# imported (as the clients do, rami.client).
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
