"""The reliability tests reuse the helpers of the server and client tests (``server_support``,
``client_harness``): their folders go on the import path, as pytest puts a test's own folder."""

from __future__ import annotations

import sys
from pathlib import Path

_TESTS = Path(__file__).resolve().parents[1]
for _folder in ("server", "client"):
    _path = str(_TESTS / _folder)
    if _path not in sys.path:
        sys.path.insert(0, _path)

from postgres_support import postgres_server, postgres_url  # noqa: E402, F401  (fixtures)
