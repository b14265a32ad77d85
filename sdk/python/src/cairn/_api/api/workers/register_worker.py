from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.register_request import RegisterRequest
from ...models.register_response import RegisterResponse
from ...types import Response


def _get_kwargs(
    *,
    body: RegisterRequest,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/api/workers/register",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Problem | RegisterResponse | None:
    if response.status_code == 200:
        response_200 = RegisterResponse.from_dict(response.json())

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
) -> Response[Problem | RegisterResponse]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    body: RegisterRequest,
) -> Response[Problem | RegisterResponse]:
    """Register a worker and the workflows it serves

     Stores each definition (create-only; the same content again is a no-op, other content under a known
    name and version is a 409) and the worker's record. The answer carries lease_ttl_ms and
    heartbeat_ms, and the worker's id: the one given, or one the server generated when worker_id was
    absent, which the worker then names in its claims.

    Needs a key with the `worker` scope.

    Args:
        body (RegisterRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | RegisterResponse]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    body: RegisterRequest,
) -> Problem | RegisterResponse | None:
    """Register a worker and the workflows it serves

     Stores each definition (create-only; the same content again is a no-op, other content under a known
    name and version is a 409) and the worker's record. The answer carries lease_ttl_ms and
    heartbeat_ms, and the worker's id: the one given, or one the server generated when worker_id was
    absent, which the worker then names in its claims.

    Needs a key with the `worker` scope.

    Args:
        body (RegisterRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | RegisterResponse
    """

    return sync_detailed(
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    body: RegisterRequest,
) -> Response[Problem | RegisterResponse]:
    """Register a worker and the workflows it serves

     Stores each definition (create-only; the same content again is a no-op, other content under a known
    name and version is a 409) and the worker's record. The answer carries lease_ttl_ms and
    heartbeat_ms, and the worker's id: the one given, or one the server generated when worker_id was
    absent, which the worker then names in its claims.

    Needs a key with the `worker` scope.

    Args:
        body (RegisterRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | RegisterResponse]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    body: RegisterRequest,
) -> Problem | RegisterResponse | None:
    """Register a worker and the workflows it serves

     Stores each definition (create-only; the same content again is a no-op, other content under a known
    name and version is a 409) and the worker's record. The answer carries lease_ttl_ms and
    heartbeat_ms, and the worker's id: the one given, or one the server generated when worker_id was
    absent, which the worker then names in its claims.

    Needs a key with the `worker` scope.

    Args:
        body (RegisterRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | RegisterResponse
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
        )
    ).parsed
