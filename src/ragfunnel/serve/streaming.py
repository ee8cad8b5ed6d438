"""Streaming an answer to a client that may go away: the frames come from a blocking iterator (the Answerer's events,
the LLM's tokens) run in the threadpool one at a time; when the client disconnects (Starlette cancels the response)
the iterator is told to stop, and closed as soon as the frame in progress is done (at most one more token), which
closes the LLM's stream and so releases its lock; `on_close` (the generation slot) runs either way."""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator, Callable, Iterator

from fastapi.concurrency import run_in_threadpool

log = logging.getLogger("ragfunnel.serve")


class Cancellable:
    """An iterator that stops at the next item once `cancel()` is called, and whose `close()` waits for the item in
    progress (a generator cannot be closed while it runs in another thread)."""

    def __init__(self, inner: Iterator[str]):
        self.inner = inner
        self.cancelled = threading.Event()
        self._running = threading.Lock()
        self.closed = threading.Event()

    def __iter__(self) -> Cancellable:
        return self

    def __next__(self) -> str:
        if self.cancelled.is_set():
            raise StopIteration
        with self._running:
            if self.cancelled.is_set():
                raise StopIteration
            return next(self.inner)

    def cancel(self) -> None:
        self.cancelled.set()

    def close(self) -> None:
        with self._running:  # waits for a next() in progress: at most one more token
            close = getattr(self.inner, "close", None)
            try:
                if close is not None:
                    close()
            finally:
                self.closed.set()


async def stream(frames: Iterator[str], on_close: Callable[[], None] | None = None) -> AsyncIterator[str]:
    """`frames` as an async iterator for a StreamingResponse: each next() in the threadpool; on any end (done,
    error, the client gone) the frames are closed and `on_close` runs, exactly once."""
    source = Cancellable(frames)
    finished = False
    try:
        while True:
            frame = await run_in_threadpool(next, source, None)
            if frame is None:
                finished = True
                break
            yield frame
    finally:
        source.cancel()

        def close() -> None:
            try:
                source.close()
            except Exception:  # noqa: BLE001 - closing after a disconnect: nobody is left to tell
                log.exception("closing an answer stream failed")
            finally:
                if on_close is not None:
                    on_close()

        if finished:
            close()
        else:  # cancelled (the client went away) or failed: close in the background once the token in flight is done
            threading.Thread(target=close, name="ragfunnel-stream-close", daemon=True).start()
