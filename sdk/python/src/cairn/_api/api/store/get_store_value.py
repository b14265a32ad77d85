from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.store_entry import StoreEntry
from ...types import Response


def _get_kwargs(
    namespace: str,
    key: str,
) -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/api/store/{namespace}/{key}".format(
            namespace=quote(str(namespace), safe=""),
            key=quote(str(key), safe=""),
        ),
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Problem | StoreEntry | None:
    if response.status_code == 200:
        response_200 = StoreEntry.from_dict(response.json())

        return response_200

    if response.status_code == 401:
        response_401 = Problem.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = Problem.from_dict(response.json())

        return response_403

    if response.status_code == 404:
        response_404 = Problem.from_dict(response.json())

        return response_404

    if response.status_code == 422:
        response_422 = Problem.from_dict(response.json())

        return response_422

    if response.status_code == 500:
        response_500 = Problem.from_dict(response.json())

        return response_500

    if response.status_code == 502:
        response_502 = Problem.from_dict(response.json())

        return response_502

    if response.status_code == 503:
        response_503 = Problem.from_dict(response.json())

        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[Problem | StoreEntry]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    namespace: str,
    key: str,
    *,
    client: AuthenticatedClient,
) -> Response[Problem | StoreEntry]:
    """Read a key of the long-term store

     The value and its version. One GET on the bucket. A key with no value is a 404.

    Needs a key with the `store` scope.

    Args:
        namespace (str): Namespace.
        key (str): Key.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | StoreEntry]
    """

    kwargs = _get_kwargs(
        namespace=namespace,
        key=key,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    namespace: str,
    key: str,
    *,
    client: AuthenticatedClient,
) -> Problem | StoreEntry | None:
    """Read a key of the long-term store

     The value and its version. One GET on the bucket. A key with no value is a 404.

    Needs a key with the `store` scope.

    Args:
        namespace (str): Namespace.
        key (str): Key.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | StoreEntry
    """

    return sync_detailed(
        namespace=namespace,
        key=key,
        client=client,
    ).parsed


async def asyncio_detailed(
    namespace: str,
    key: str,
    *,
    client: AuthenticatedClient,
) -> Response[Problem | StoreEntry]:
    """Read a key of the long-term store

     The value and its version. One GET on the bucket. A key with no value is a 404.

    Needs a key with the `store` scope.

    Args:
        namespace (str): Namespace.
        key (str): Key.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | StoreEntry]
    """

    kwargs = _get_kwargs(
        namespace=namespace,
        key=key,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    namespace: str,
    key: str,
    *,
    client: AuthenticatedClient,
) -> Problem | StoreEntry | None:
    """Read a key of the long-term store

     The value and its version. One GET on the bucket. A key with no value is a 404.

    Needs a key with the `store` scope.

    Args:
        namespace (str): Namespace.
        key (str): Key.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | StoreEntry
    """

    return (
        await asyncio_detailed(
            namespace=namespace,
            key=key,
            client=client,
        )
    ).parsed
