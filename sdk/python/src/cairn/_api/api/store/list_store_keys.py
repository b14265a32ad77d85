from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.store_page import StorePage
from ...types import UNSET, Response, Unset


def _get_kwargs(
    namespace: str,
    *,
    prefix: str | Unset = UNSET,
    cursor: str | Unset = UNSET,
    limit: int | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["prefix"] = prefix

    params["cursor"] = cursor

    params["limit"] = limit

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/api/store/{namespace}".format(
            namespace=quote(str(namespace), safe=""),
        ),
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Problem | StorePage | None:
    if response.status_code == 200:
        response_200 = StorePage.from_dict(response.json())

        return response_200

    if response.status_code == 401:
        response_401 = Problem.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = Problem.from_dict(response.json())

        return response_403

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
) -> Response[Problem | StorePage]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    namespace: str,
    *,
    client: AuthenticatedClient,
    prefix: str | Unset = UNSET,
    cursor: str | Unset = UNSET,
    limit: int | Unset = UNSET,
) -> Response[Problem | StorePage]:
    """List a namespace's keys

     Keys in key order with their versions and sizes, not their values; cursor-paginated (one LIST on the
    bucket a page). A page may hold fewer keys than the limit and still have a next one.

    Needs a key with the `store` scope.

    Args:
        namespace (str): Namespace.
        prefix (str | Unset): Only keys that start with this.
        cursor (str | Unset): next_cursor of the previous page.
        limit (int | Unset): Page size (default 100, cap 1000).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | StorePage]
    """

    kwargs = _get_kwargs(
        namespace=namespace,
        prefix=prefix,
        cursor=cursor,
        limit=limit,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    namespace: str,
    *,
    client: AuthenticatedClient,
    prefix: str | Unset = UNSET,
    cursor: str | Unset = UNSET,
    limit: int | Unset = UNSET,
) -> Problem | StorePage | None:
    """List a namespace's keys

     Keys in key order with their versions and sizes, not their values; cursor-paginated (one LIST on the
    bucket a page). A page may hold fewer keys than the limit and still have a next one.

    Needs a key with the `store` scope.

    Args:
        namespace (str): Namespace.
        prefix (str | Unset): Only keys that start with this.
        cursor (str | Unset): next_cursor of the previous page.
        limit (int | Unset): Page size (default 100, cap 1000).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | StorePage
    """

    return sync_detailed(
        namespace=namespace,
        client=client,
        prefix=prefix,
        cursor=cursor,
        limit=limit,
    ).parsed


async def asyncio_detailed(
    namespace: str,
    *,
    client: AuthenticatedClient,
    prefix: str | Unset = UNSET,
    cursor: str | Unset = UNSET,
    limit: int | Unset = UNSET,
) -> Response[Problem | StorePage]:
    """List a namespace's keys

     Keys in key order with their versions and sizes, not their values; cursor-paginated (one LIST on the
    bucket a page). A page may hold fewer keys than the limit and still have a next one.

    Needs a key with the `store` scope.

    Args:
        namespace (str): Namespace.
        prefix (str | Unset): Only keys that start with this.
        cursor (str | Unset): next_cursor of the previous page.
        limit (int | Unset): Page size (default 100, cap 1000).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | StorePage]
    """

    kwargs = _get_kwargs(
        namespace=namespace,
        prefix=prefix,
        cursor=cursor,
        limit=limit,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    namespace: str,
    *,
    client: AuthenticatedClient,
    prefix: str | Unset = UNSET,
    cursor: str | Unset = UNSET,
    limit: int | Unset = UNSET,
) -> Problem | StorePage | None:
    """List a namespace's keys

     Keys in key order with their versions and sizes, not their values; cursor-paginated (one LIST on the
    bucket a page). A page may hold fewer keys than the limit and still have a next one.

    Needs a key with the `store` scope.

    Args:
        namespace (str): Namespace.
        prefix (str | Unset): Only keys that start with this.
        cursor (str | Unset): next_cursor of the previous page.
        limit (int | Unset): Page size (default 100, cap 1000).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | StorePage
    """

    return (
        await asyncio_detailed(
            namespace=namespace,
            client=client,
            prefix=prefix,
            cursor=cursor,
            limit=limit,
        )
    ).parsed
