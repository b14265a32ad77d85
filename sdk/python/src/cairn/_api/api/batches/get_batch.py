from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.batch import Batch
from ...models.problem import Problem
from ...types import Response


def _get_kwargs(
    batch: str,
) -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/api/batches/{batch}".format(
            batch=quote(str(batch), safe=""),
        ),
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Batch | Problem | None:
    if response.status_code == 200:
        response_200 = Batch.from_dict(response.json())

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
) -> Response[Batch | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    batch: str,
    *,
    client: AuthenticatedClient,
) -> Response[Batch | Problem]:
    """Get a batch

     A batch's state (running, done) and counters: runs scanned, matched, applied, skipped, failed.

    Needs a key with the `read` scope.

    Args:
        batch (str): Batch id.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Batch | Problem]
    """

    kwargs = _get_kwargs(
        batch=batch,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    batch: str,
    *,
    client: AuthenticatedClient,
) -> Batch | Problem | None:
    """Get a batch

     A batch's state (running, done) and counters: runs scanned, matched, applied, skipped, failed.

    Needs a key with the `read` scope.

    Args:
        batch (str): Batch id.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Batch | Problem
    """

    return sync_detailed(
        batch=batch,
        client=client,
    ).parsed


async def asyncio_detailed(
    batch: str,
    *,
    client: AuthenticatedClient,
) -> Response[Batch | Problem]:
    """Get a batch

     A batch's state (running, done) and counters: runs scanned, matched, applied, skipped, failed.

    Needs a key with the `read` scope.

    Args:
        batch (str): Batch id.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Batch | Problem]
    """

    kwargs = _get_kwargs(
        batch=batch,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    batch: str,
    *,
    client: AuthenticatedClient,
) -> Batch | Problem | None:
    """Get a batch

     A batch's state (running, done) and counters: runs scanned, matched, applied, skipped, failed.

    Needs a key with the `read` scope.

    Args:
        batch (str): Batch id.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Batch | Problem
    """

    return (
        await asyncio_detailed(
            batch=batch,
            client=client,
        )
    ).parsed
