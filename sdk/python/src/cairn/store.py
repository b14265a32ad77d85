"""The long-term store: a key-value store, kept in the engine's bucket, for
data that outlives runs (per-user memory, learned facts). Needs a key with the
store scope. Writes are not part of a run's history: a retried step writes
again, so write values derived from the step, or use ``update``, which writes
over the version it read. With a keyring, values are encrypted whole.

``Client.store(ns)`` returns a :class:`Store`, ``AsyncClient.store(ns)`` an
:class:`AsyncStore`: the same operations, blocking or awaited."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._api.api.store import delete_store_value, get_store_value, list_store_keys, put_store_value
from ._api.models import StoreEntry, StoreKeyInfo, StorePage, StorePutRequest
from ._api.types import UNSET
from .client import _call
from .codec import open_value, seal_value
from .errors import APIError

if TYPE_CHECKING:
    from .client import AsyncClient, Client, _Op


@dataclass(frozen=True)
class Entry:
    """A key's value (decrypted) and its version."""

    key: str
    value: Any
    version: str


def _op_get(k: Any, ns: str, key: str) -> _Op[Entry | None]:
    try:
        e: StoreEntry = yield _call(get_store_value, namespace=ns, key=key)
    except APIError as err:
        if err.status == 404:
            return None
        raise
    return Entry(key=key, value=open_value(k, e.value), version=e.version)


def _op_put(k: Any, ns: str, key: str, value: Any, if_version: str | None, if_absent: bool) -> _Op[str]:
    body = StorePutRequest(
        value=seal_value(k, value), if_version=if_version or UNSET, if_absent=True if if_absent else UNSET
    )
    e: StoreEntry = yield _call(put_store_value, namespace=ns, key=key, body=body)
    return e.version


def _op_update(k: Any, ns: str, key: str, fn: Callable[[Any], Any]) -> _Op[str]:
    while True:
        cur = yield from _op_get(k, ns, key)
        new = fn(None if cur is None else cur.value)
        try:
            return (yield from _op_put(k, ns, key, new, None if cur is None else cur.version, cur is None))
        except APIError as err:
            if err.status != 409:
                raise


def _op_delete(ns: str, key: str, if_version: str | None) -> _Op[None]:
    yield _call(delete_store_value, namespace=ns, key=key, if_version=if_version or UNSET)


def _op_page(ns: str, prefix: str | None, cursor: str | None) -> _Op[StorePage]:
    page: StorePage = yield _call(
        list_store_keys, namespace=ns, prefix=prefix or UNSET, cursor=cursor or UNSET
    )
    return page


class Store:
    """One namespace of the long-term store, through a blocking client."""

    def __init__(self, client: Client, namespace: str) -> None:
        self._c, self.namespace = client, namespace

    def get(self, key: str) -> Entry | None:
        """The value and its version; None when the key has none."""
        return self._c._drive(_op_get(self._c.codec, self.namespace, key))

    def put(self, key: str, value: Any, *, if_version: str | None = None, if_absent: bool = False) -> str:
        """Writes value (any JSON value): over that version only, or only where there is no value.
        Another value is an APIError 409 and nothing is written. Returns the new version."""
        return self._c._drive(_op_put(self._c.codec, self.namespace, key, value, if_version, if_absent))

    def update(self, key: str, fn: Callable[[Any], Any]) -> str:
        """Reads key, calls fn with its value (None when it has none) and writes what fn returns over
        the version it read, again when another writer came first. fn may run several times."""
        return self._c._drive(_op_update(self._c.codec, self.namespace, key, fn))

    def delete(self, key: str, *, if_version: str | None = None) -> None:
        """Deletes key's value; with if_version only that version (another value, or none, is a 409)."""
        self._c._drive(_op_delete(self.namespace, key, if_version))

    def list_keys(self, prefix: str | None = None) -> Iterator[StoreKeyInfo]:
        """The keys that start with prefix, in key order, a page at a time."""
        cursor: str | None = None
        while True:
            page = self._c._drive(_op_page(self.namespace, prefix, cursor))
            yield from page.keys
            cursor = page.next_cursor or None
            if not cursor:
                return


class AsyncStore:
    """One namespace of the long-term store, through an asyncio client."""

    def __init__(self, client: AsyncClient, namespace: str) -> None:
        self._c, self.namespace = client, namespace

    def get(self, key: str) -> Awaitable[Entry | None]:
        return self._c._drive(_op_get(self._c.codec, self.namespace, key))

    def put(self, key: str, value: Any, *, if_version: str | None = None, if_absent: bool = False) -> Awaitable[str]:
        return self._c._drive(_op_put(self._c.codec, self.namespace, key, value, if_version, if_absent))

    def update(self, key: str, fn: Callable[[Any], Any]) -> Awaitable[str]:
        return self._c._drive(_op_update(self._c.codec, self.namespace, key, fn))

    def delete(self, key: str, *, if_version: str | None = None) -> Awaitable[None]:
        return self._c._drive(_op_delete(self.namespace, key, if_version))

    async def list_keys(self, prefix: str | None = None) -> AsyncIterator[StoreKeyInfo]:
        cursor: str | None = None
        while True:
            page = await self._c._drive(_op_page(self.namespace, prefix, cursor))
            for k in page.keys:
                yield k
            cursor = page.next_cursor or None
            if not cursor:
                return
