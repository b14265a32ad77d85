from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...types import Response


def _get_kwargs(
    lease: str,
    sha256: str,
) -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/api/steps/{lease}/payloads/{sha256}".format(
            lease=quote(str(lease), safe=""),
            sha256=quote(str(sha256), safe=""),
        ),
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Problem | str | None:
    if response.status_code == 200:
        response_200 = cast(str, response.json())
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
) -> Response[Problem | str]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    lease: str,
    sha256: str,
    *,
    client: AuthenticatedClient,
) -> Response[Problem | str]:
    """Get a payload of a lease's run

     For workers: a lease's input, its steps' outputs and its state values larger than the server's
    inline limit arrive as references, {"$cairn_payload":{"sha256":…,"bytes":…}}; this answers the value
    one names. The lease proves the run (an ended lease still does).

    Needs a key with the `worker` scope.

    Args:
        lease (str): The lease id from claim.
        sha256 (str): The payload's SHA-256 (hex), from its reference.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | str]
    """

    kwargs = _get_kwargs(
        lease=lease,
        sha256=sha256,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    lease: str,
    sha256: str,
    *,
    client: AuthenticatedClient,
) -> Problem | str | None:
    """Get a payload of a lease's run

     For workers: a lease's input, its steps' outputs and its state values larger than the server's
    inline limit arrive as references, {"$cairn_payload":{"sha256":…,"bytes":…}}; this answers the value
    one names. The lease proves the run (an ended lease still does).

    Needs a key with the `worker` scope.

    Args:
        lease (str): The lease id from claim.
        sha256 (str): The payload's SHA-256 (hex), from its reference.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | str
    """

    return sync_detailed(
        lease=lease,
        sha256=sha256,
        client=client,
    ).parsed


async def asyncio_detailed(
    lease: str,
    sha256: str,
    *,
    client: AuthenticatedClient,
) -> Response[Problem | str]:
    """Get a payload of a lease's run

     For workers: a lease's input, its steps' outputs and its state values larger than the server's
    inline limit arrive as references, {"$cairn_payload":{"sha256":…,"bytes":…}}; this answers the value
    one names. The lease proves the run (an ended lease still does).

    Needs a key with the `worker` scope.

    Args:
        lease (str): The lease id from claim.
        sha256 (str): The payload's SHA-256 (hex), from its reference.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | str]
    """

    kwargs = _get_kwargs(
        lease=lease,
        sha256=sha256,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    lease: str,
    sha256: str,
    *,
    client: AuthenticatedClient,
) -> Problem | str | None:
    """Get a payload of a lease's run

     For workers: a lease's input, its steps' outputs and its state values larger than the server's
    inline limit arrive as references, {"$cairn_payload":{"sha256":…,"bytes":…}}; this answers the value
    one names. The lease proves the run (an ended lease still does).

    Needs a key with the `worker` scope.

    Args:
        lease (str): The lease id from claim.
        sha256 (str): The payload's SHA-256 (hex), from its reference.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | str
    """

    return (
        await asyncio_detailed(
            lease=lease,
            sha256=sha256,
            client=client,
        )
    ).parsed
