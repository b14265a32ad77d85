from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.progress_request import ProgressRequest
from ...types import Response


def _get_kwargs(
    lease: str,
    *,
    body: ProgressRequest,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/api/steps/{lease}/progress".format(
            lease=quote(str(lease), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Any | Problem | None:
    if response.status_code == 204:
        response_204 = cast(Any, None)
        return response_204

    if response.status_code == 400:
        response_400 = Problem.from_dict(response.json())

        return response_400

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

    if response.status_code == 413:
        response_413 = Problem.from_dict(response.json())

        return response_413

    if response.status_code == 422:
        response_422 = Problem.from_dict(response.json())

        return response_422

    if response.status_code == 429:
        response_429 = Problem.from_dict(response.json())

        return response_429

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
    lease: str,
    *,
    client: AuthenticatedClient,
    body: ProgressRequest,
) -> Response[Any | Problem]:
    """Publish a step's progress

     Hands a JSON value (at most 16 KiB) to the watchers of the run's stream, on this instance at once
    and on the others over the notification bus. Nothing is stored and nothing is written: the lease is
    proven from this instance's lease cache, or by one read per lease and instance. A lease may send 50
    messages a second with a burst of 20; more are refused with 429 and Retry-After (the SDKs wait and
    resend). A lease that ended is refused as fenced.

    Needs a key with the `worker` scope.

    Args:
        lease (str): The lease id from claim.
        body (ProgressRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | Problem]
    """

    kwargs = _get_kwargs(
        lease=lease,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    lease: str,
    *,
    client: AuthenticatedClient,
    body: ProgressRequest,
) -> Any | Problem | None:
    """Publish a step's progress

     Hands a JSON value (at most 16 KiB) to the watchers of the run's stream, on this instance at once
    and on the others over the notification bus. Nothing is stored and nothing is written: the lease is
    proven from this instance's lease cache, or by one read per lease and instance. A lease may send 50
    messages a second with a burst of 20; more are refused with 429 and Retry-After (the SDKs wait and
    resend). A lease that ended is refused as fenced.

    Needs a key with the `worker` scope.

    Args:
        lease (str): The lease id from claim.
        body (ProgressRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | Problem
    """

    return sync_detailed(
        lease=lease,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    lease: str,
    *,
    client: AuthenticatedClient,
    body: ProgressRequest,
) -> Response[Any | Problem]:
    """Publish a step's progress

     Hands a JSON value (at most 16 KiB) to the watchers of the run's stream, on this instance at once
    and on the others over the notification bus. Nothing is stored and nothing is written: the lease is
    proven from this instance's lease cache, or by one read per lease and instance. A lease may send 50
    messages a second with a burst of 20; more are refused with 429 and Retry-After (the SDKs wait and
    resend). A lease that ended is refused as fenced.

    Needs a key with the `worker` scope.

    Args:
        lease (str): The lease id from claim.
        body (ProgressRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | Problem]
    """

    kwargs = _get_kwargs(
        lease=lease,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    lease: str,
    *,
    client: AuthenticatedClient,
    body: ProgressRequest,
) -> Any | Problem | None:
    """Publish a step's progress

     Hands a JSON value (at most 16 KiB) to the watchers of the run's stream, on this instance at once
    and on the others over the notification bus. Nothing is stored and nothing is written: the lease is
    proven from this instance's lease cache, or by one read per lease and instance. A lease may send 50
    messages a second with a burst of 20; more are refused with 429 and Retry-After (the SDKs wait and
    resend). A lease that ended is refused as fenced.

    Needs a key with the `worker` scope.

    Args:
        lease (str): The lease id from claim.
        body (ProgressRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | Problem
    """

    return (
        await asyncio_detailed(
            lease=lease,
            client=client,
            body=body,
        )
    ).parsed
