from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...types import UNSET, Response, Unset


def _get_kwargs(
    namespace: str,
    key: str,
    *,
    if_version: str | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["if_version"] = if_version

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "delete",
        "url": "/v1/api/store/{namespace}/{key}".format(
            namespace=quote(str(namespace), safe=""),
            key=quote(str(key), safe=""),
        ),
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Any | Problem | None:
    if response.status_code == 204:
        response_204 = cast(Any, None)
        return response_204

    if response.status_code == 401:
        response_401 = Problem.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = Problem.from_dict(response.json())

        return response_403

    if response.status_code == 409:
        response_409 = Problem.from_dict(response.json())

        return response_409

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
) -> Response[Any | Problem]:
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
    if_version: str | Unset = UNSET,
) -> Response[Any | Problem]:
    """Delete a key of the long-term store

     Deleting a key with no value is not an error, unless if_version is set: then only that version is
    deleted, and another value (or none) is a 409.

    Needs a key with the `store` scope.

    Args:
        namespace (str): Namespace.
        key (str): Key.
        if_version (str | Unset): Delete only this version of the value; another is a 409.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | Problem]
    """

    kwargs = _get_kwargs(
        namespace=namespace,
        key=key,
        if_version=if_version,
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
    if_version: str | Unset = UNSET,
) -> Any | Problem | None:
    """Delete a key of the long-term store

     Deleting a key with no value is not an error, unless if_version is set: then only that version is
    deleted, and another value (or none) is a 409.

    Needs a key with the `store` scope.

    Args:
        namespace (str): Namespace.
        key (str): Key.
        if_version (str | Unset): Delete only this version of the value; another is a 409.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | Problem
    """

    return sync_detailed(
        namespace=namespace,
        key=key,
        client=client,
        if_version=if_version,
    ).parsed


async def asyncio_detailed(
    namespace: str,
    key: str,
    *,
    client: AuthenticatedClient,
    if_version: str | Unset = UNSET,
) -> Response[Any | Problem]:
    """Delete a key of the long-term store

     Deleting a key with no value is not an error, unless if_version is set: then only that version is
    deleted, and another value (or none) is a 409.

    Needs a key with the `store` scope.

    Args:
        namespace (str): Namespace.
        key (str): Key.
        if_version (str | Unset): Delete only this version of the value; another is a 409.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | Problem]
    """

    kwargs = _get_kwargs(
        namespace=namespace,
        key=key,
        if_version=if_version,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    namespace: str,
    key: str,
    *,
    client: AuthenticatedClient,
    if_version: str | Unset = UNSET,
) -> Any | Problem | None:
    """Delete a key of the long-term store

     Deleting a key with no value is not an error, unless if_version is set: then only that version is
    deleted, and another value (or none) is a 409.

    Needs a key with the `store` scope.

    Args:
        namespace (str): Namespace.
        key (str): Key.
        if_version (str | Unset): Delete only this version of the value; another is a 409.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | Problem
    """

    return (
        await asyncio_detailed(
            namespace=namespace,
            key=key,
            client=client,
            if_version=if_version,
        )
    ).parsed
