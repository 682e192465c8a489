"""Rami clients: the terminal client, the bot runner and the bot kit."""

import os

# gRPC's own log goes to standard error, from INFO up by default: among others a line each time
# a server closes a connection (GOAWAY), as rami-server does with one that makes no call for a
# while. That line would land in the middle of the terminal client's screen. Only errors,
# unless GRPC_VERBOSITY says otherwise; it must be set before gRPC is imported.
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
