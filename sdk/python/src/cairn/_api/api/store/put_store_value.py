from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.store_entry import StoreEntry
from ...models.store_put_request import StorePutRequest
from ...types import Response


def _get_kwargs(
    namespace: str,
    key: str,
    *,
    body: StorePutRequest,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "put",
        "url": "/v1/api/store/{namespace}/{key}".format(
            namespace=quote(str(namespace), safe=""),
            key=quote(str(key), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Problem | StoreEntry | None:
    if response.status_code == 200:
        response_200 = StoreEntry.from_dict(response.json())

        return response_200

    if response.status_code == 400:
        response_400 = Problem.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = Problem.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = Problem.from_dict(response.json())

        return response_403

    if response.status_code == 409:
        response_409 = Problem.from_dict(response.json())

        return response_409

    if response.status_code == 413:
        response_413 = Problem.from_dict(response.json())

        return response_413

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
    body: StorePutRequest,
) -> Response[Problem | StoreEntry]:
    """Write a key of the long-term store

     Writes any JSON value (at most 1 MiB compacted): over the version if_version names only, or only
    where there is no value with if_absent; a value that does not match is a 409 and nothing is written.
    Answers the new version. One PUT on the bucket (conditional with a condition). Store writes are not
    part of a run's history: a retried step writes again.

    Needs a key with the `store` scope.

    Args:
        namespace (str): Namespace.
        key (str): Key.
        body (StorePutRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | StoreEntry]
    """

    kwargs = _get_kwargs(
        namespace=namespace,
        key=key,
        body=body,
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
    body: StorePutRequest,
) -> Problem | StoreEntry | None:
    """Write a key of the long-term store

     Writes any JSON value (at most 1 MiB compacted): over the version if_version names only, or only
    where there is no value with if_absent; a value that does not match is a 409 and nothing is written.
    Answers the new version. One PUT on the bucket (conditional with a condition). Store writes are not
    part of a run's history: a retried step writes again.

    Needs a key with the `store` scope.

    Args:
        namespace (str): Namespace.
        key (str): Key.
        body (StorePutRequest):

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
        body=body,
    ).parsed


async def asyncio_detailed(
    namespace: str,
    key: str,
    *,
    client: AuthenticatedClient,
    body: StorePutRequest,
) -> Response[Problem | StoreEntry]:
    """Write a key of the long-term store

     Writes any JSON value (at most 1 MiB compacted): over the version if_version names only, or only
    where there is no value with if_absent; a value that does not match is a 409 and nothing is written.
    Answers the new version. One PUT on the bucket (conditional with a condition). Store writes are not
    part of a run's history: a retried step writes again.

    Needs a key with the `store` scope.

    Args:
        namespace (str): Namespace.
        key (str): Key.
        body (StorePutRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | StoreEntry]
    """

    kwargs = _get_kwargs(
        namespace=namespace,
        key=key,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    namespace: str,
    key: str,
    *,
    client: AuthenticatedClient,
    body: StorePutRequest,
) -> Problem | StoreEntry | None:
    """Write a key of the long-term store

     Writes any JSON value (at most 1 MiB compacted): over the version if_version names only, or only
    where there is no value with if_absent; a value that does not match is a 409 and nothing is written.
    Answers the new version. One PUT on the bucket (conditional with a condition). Store writes are not
    part of a run's history: a retried step writes again.

    Needs a key with the `store` scope.

    Args:
        namespace (str): Namespace.
        key (str): Key.
        body (StorePutRequest):

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
            body=body,
        )
    ).parsed
