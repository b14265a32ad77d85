"""HTTP transports that send again the requests that certainly changed
nothing, as the Go and TypeScript clients do: answered 503 or 429 (the API's
promise: nothing was applied; Retry-After is honoured up to 5 s), or refused
before any byte was sent (the connection could not be made). A GET changes
nothing whatever its outcome, so it is also sent again after a server error
(500, 502, 504) or a connection lost mid-request. Up to 4 sends, 100 ms
doubling with jitter (Retry-After-Ms, when the answer has it, is waited
exactly)."""

from __future__ import annotations

import asyncio
import random
import time

import httpx

ATTEMPTS = 4
MAX_WAIT = 5.0


def _backoff(n: int) -> float:
    b = 0.1 * (1 << (n - 1))
    return b / 2 + random.uniform(0, b / 2)


def _retry_answer(n: int, safe: bool, resp: httpx.Response) -> float | None:
    """The pause before sending again after the n-th send's answer, or None."""
    if n >= ATTEMPTS:
        return None
    b = _backoff(n)
    if safe and resp.status_code in (500, 502, 504):
        return min(b, MAX_WAIT)
    if resp.status_code in (503, 429):
        ms = resp.headers.get("retry-after-ms", "")
        if ms.isdigit():  # the server's exact ask (a step's progress over its rate)
            return min(max(int(ms), 10) / 1000, MAX_WAIT)
        ra = resp.headers.get("retry-after", "")
        if ra.isdigit():
            return min(max(float(ra), b), MAX_WAIT)
        return min(b, MAX_WAIT)
    return None


def _retry_error(n: int, safe: bool, err: Exception) -> float | None:
    if n >= ATTEMPTS:
        return None
    if isinstance(err, httpx.ConnectError):
        return min(_backoff(n), MAX_WAIT)  # nothing was sent
    if safe and isinstance(err, httpx.TransportError) and not isinstance(err, httpx.TimeoutException):
        return min(_backoff(n), MAX_WAIT)
    return None


class RetryTransport(httpx.BaseTransport):
    def __init__(self, inner: httpx.BaseTransport) -> None:
        self.inner = inner

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        safe = request.method in ("GET", "HEAD")
        n = 0
        while True:
            n += 1
            try:
                resp = self.inner.handle_request(request)
            except httpx.TransportError as err:
                wait = _retry_error(n, safe, err)
                if wait is None:
                    raise
                time.sleep(wait)
                continue
            wait = _retry_answer(n, safe, resp)
            if wait is None:
                return resp
            resp.close()
            time.sleep(wait)

    def close(self) -> None:
        self.inner.close()


class AsyncRetryTransport(httpx.AsyncBaseTransport):
    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        safe = request.method in ("GET", "HEAD")
        n = 0
        while True:
            n += 1
            try:
                resp = await self.inner.handle_async_request(request)
            except httpx.TransportError as err:
                wait = _retry_error(n, safe, err)
                if wait is None:
                    raise
                await asyncio.sleep(wait)
                continue
            wait = _retry_answer(n, safe, resp)
            if wait is None:
                return resp
            await resp.aclose()
            await asyncio.sleep(wait)

    async def aclose(self) -> None:
        await self.inner.aclose()
