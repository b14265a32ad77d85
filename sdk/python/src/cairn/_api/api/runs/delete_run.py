from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...types import UNSET, Response, Unset


def _get_kwargs(
    run: str,
    *,
    force: bool | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["force"] = force

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "delete",
        "url": "/v1/api/runs/{run}".format(
            run=quote(str(run), safe=""),
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

    if response.status_code == 404:
        response_404 = Problem.from_dict(response.json())

        return response_404

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
    run: str,
    *,
    client: AuthenticatedClient,
    force: bool | Unset = UNSET,
) -> Response[Any | Problem]:
    """Delete an ended run

     Deletes the run, its leases, its idempotency key and its timer now, rather than when its retention
    passes. A run still running is a 409 unless force=true, which cancels it first.

    Needs a key with the `admin` scope.

    Args:
        run (str):
        force (bool | Unset): Cancel the run first when it is still running.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | Problem]
    """

    kwargs = _get_kwargs(
        run=run,
        force=force,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    run: str,
    *,
    client: AuthenticatedClient,
    force: bool | Unset = UNSET,
) -> Any | Problem | None:
    """Delete an ended run

     Deletes the run, its leases, its idempotency key and its timer now, rather than when its retention
    passes. A run still running is a 409 unless force=true, which cancels it first.

    Needs a key with the `admin` scope.

    Args:
        run (str):
        force (bool | Unset): Cancel the run first when it is still running.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | Problem
    """

    return sync_detailed(
        run=run,
        client=client,
        force=force,
    ).parsed


async def asyncio_detailed(
    run: str,
    *,
    client: AuthenticatedClient,
    force: bool | Unset = UNSET,
) -> Response[Any | Problem]:
    """Delete an ended run

     Deletes the run, its leases, its idempotency key and its timer now, rather than when its retention
    passes. A run still running is a 409 unless force=true, which cancels it first.

    Needs a key with the `admin` scope.

    Args:
        run (str):
        force (bool | Unset): Cancel the run first when it is still running.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | Problem]
    """

    kwargs = _get_kwargs(
        run=run,
        force=force,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    run: str,
    *,
    client: AuthenticatedClient,
    force: bool | Unset = UNSET,
) -> Any | Problem | None:
    """Delete an ended run

     Deletes the run, its leases, its idempotency key and its timer now, rather than when its retention
    passes. A run still running is a 409 unless force=true, which cancels it first.

    Needs a key with the `admin` scope.

    Args:
        run (str):
        force (bool | Unset): Cancel the run first when it is still running.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | Problem
    """

    return (
        await asyncio_detailed(
            run=run,
            client=client,
            force=force,
        )
    ).parsed
