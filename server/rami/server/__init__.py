"""The Rami server: grpc.aio services hosting tables around the engine."""
