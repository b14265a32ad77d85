from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.lease_status import LeaseStatus
from ...models.problem import Problem
from ...types import Response


def _get_kwargs(
    lease: str,
) -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/api/steps/{lease}/heartbeat".format(
            lease=quote(str(lease), safe=""),
        ),
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> LeaseStatus | Problem | None:
    if response.status_code == 200:
        response_200 = LeaseStatus.from_dict(response.json())

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
) -> Response[LeaseStatus | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    lease: str,
    *,
    client: AuthenticatedClient,
) -> Response[LeaseStatus | Problem]:
    """Extend a lease

     The only proof that the worker is alive. A fenced or run_terminal answer means: cancel the body.

    Needs a key with the `worker` scope.

    Args:
        lease (str): The lease id from claim.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[LeaseStatus | Problem]
    """

    kwargs = _get_kwargs(
        lease=lease,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    lease: str,
    *,
    client: AuthenticatedClient,
) -> LeaseStatus | Problem | None:
    """Extend a lease

     The only proof that the worker is alive. A fenced or run_terminal answer means: cancel the body.

    Needs a key with the `worker` scope.

    Args:
        lease (str): The lease id from claim.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        LeaseStatus | Problem
    """

    return sync_detailed(
        lease=lease,
        client=client,
    ).parsed


async def asyncio_detailed(
    lease: str,
    *,
    client: AuthenticatedClient,
) -> Response[LeaseStatus | Problem]:
    """Extend a lease

     The only proof that the worker is alive. A fenced or run_terminal answer means: cancel the body.

    Needs a key with the `worker` scope.

    Args:
        lease (str): The lease id from claim.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[LeaseStatus | Problem]
    """

    kwargs = _get_kwargs(
        lease=lease,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    lease: str,
    *,
    client: AuthenticatedClient,
) -> LeaseStatus | Problem | None:
    """Extend a lease

     The only proof that the worker is alive. A fenced or run_terminal answer means: cancel the body.

    Needs a key with the `worker` scope.

    Args:
        lease (str): The lease id from claim.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        LeaseStatus | Problem
    """

    return (
        await asyncio_detailed(
            lease=lease,
            client=client,
        )
    ).parsed
