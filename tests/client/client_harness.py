"""Driving the real client application through prompt-toolkit's pipe input, and reading what
it printed, as a person at a terminal would.

The client runs on its own event loop in a thread, inside ``create_app_session`` with a pipe
input and a VT100 output writing into :class:`Screen`; the test types lines and waits (always
with a bound) for text to appear, like ``expect``.
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections.abc import Awaitable, Callable

from prompt_toolkit.application import create_app_session
from prompt_toolkit.data_structures import Size
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output.vt100 import Vt100_Output

__all__ = ["Driver", "Screen", "plain"]

_ANSI = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[@-Z\\-_]|[()][0-9A-B])")


def plain(text: str) -> str:
    """``text`` without terminal escape sequences or carriage returns."""
    return _ANSI.sub("", text).replace("\r", "")


class Screen:
    """A stand-in for the terminal: keeps everything written to it."""

    encoding = "utf-8"

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._lock = threading.Lock()

    def write(self, data: str) -> int:
        """Keep ``data``."""
        with self._lock:
            self._parts.append(data)
        return len(data)

    def flush(self) -> None:
        """Nothing to flush."""

    def isatty(self) -> bool:
        """Not a terminal (so no cursor position requests)."""
        return False

    def raw(self) -> str:
        """Everything written, escape sequences included."""
        with self._lock:
            return "".join(self._parts)

    def text(self) -> str:
        """Everything written, as plain text."""
        return plain(self.raw())


class Driver:
    """Runs ``main`` (the client) and types into it."""

    def __init__(
        self, main: Callable[[], Awaitable[None]], columns: int = 160, rows: int = 50
    ) -> None:
        self.main = main
        self.screen = Screen()
        self.columns = columns
        self.rows = rows
        self.cursor = 0
        self.error: BaseException | None = None
        self._pipe_cm = create_pipe_input()
        self.input = self._pipe_cm.__enter__()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        output = Vt100_Output(
            self.screen,
            lambda: Size(rows=self.rows, columns=self.columns),  # type: ignore[arg-type]
            term="xterm-256color",
        )

        async def go() -> None:
            with create_app_session(input=self.input, output=output):
                await self.main()

        try:
            asyncio.run(go())
        except BaseException as e:  # reported by the test, not lost in the thread
            self.error = e

    def start(self) -> Driver:
        """Start the client."""
        self.thread.start()
        return self

    def type(self, line: str) -> None:
        """Type a line and press Enter."""
        self.input.send_text(line + "\r")

    def keys(self, data: str) -> None:
        """Send raw keys (escape sequences for function keys)."""
        self.input.send_text(data)

    def expect(self, pattern: str, timeout: float = 10.0) -> re.Match[str]:
        """Wait for ``pattern`` (a regex) to be printed after the last match; move past it."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while True:
            text = self.screen.text()
            found = regex.search(text, self.cursor)
            if found:
                self.cursor = found.end()
                return found
            if self.error is not None or not self.thread.is_alive():
                raise AssertionError(
                    f"the client stopped ({self.error!r}) before {pattern!r}:\n"
                    f"{text[self.cursor :][-3000:]}"
                )
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{pattern!r} did not appear within {timeout}s; after the "
                    f"last match the screen shows:\n{text[self.cursor :][-3000:]}"
                )
            time.sleep(0.02)

    def close(self, timeout: float = 10.0) -> None:
        """Quit the client (if it still runs, saying yes if it asks) and wait for it to end."""
        if self.thread.is_alive():
            self.type("quit")
            self.type("yes")  # quit asks during a game; otherwise the client has ended
            self.thread.join(timeout)
        self._pipe_cm.__exit__(None, None, None)
        assert not self.thread.is_alive(), "the client did not quit"
        if self.error is not None:
            raise AssertionError(f"the client failed: {self.error!r}") from self.error
