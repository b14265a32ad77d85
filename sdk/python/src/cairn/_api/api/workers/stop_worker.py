from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...types import Response


def _get_kwargs(
    worker: str,
) -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/api/workers/{worker}/stop".format(
            worker=quote(str(worker), safe=""),
        ),
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
    worker: str,
    *,
    client: AuthenticatedClient,
) -> Response[Any | Problem]:
    """Say a worker stopped

     A worker that drained and stops says so: it is listed as gone (alive false, stopped_at) at once
    instead of after the alive window. A worker that registers again (every start does) is alive.
    Sending it is optional: a worker that dies without it is gone once the alive window passes.

    Needs a key with the `worker` scope.

    Args:
        worker (str): The worker's id.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | Problem]
    """

    kwargs = _get_kwargs(
        worker=worker,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    worker: str,
    *,
    client: AuthenticatedClient,
) -> Any | Problem | None:
    """Say a worker stopped

     A worker that drained and stops says so: it is listed as gone (alive false, stopped_at) at once
    instead of after the alive window. A worker that registers again (every start does) is alive.
    Sending it is optional: a worker that dies without it is gone once the alive window passes.

    Needs a key with the `worker` scope.

    Args:
        worker (str): The worker's id.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | Problem
    """

    return sync_detailed(
        worker=worker,
        client=client,
    ).parsed


async def asyncio_detailed(
    worker: str,
    *,
    client: AuthenticatedClient,
) -> Response[Any | Problem]:
    """Say a worker stopped

     A worker that drained and stops says so: it is listed as gone (alive false, stopped_at) at once
    instead of after the alive window. A worker that registers again (every start does) is alive.
    Sending it is optional: a worker that dies without it is gone once the alive window passes.

    Needs a key with the `worker` scope.

    Args:
        worker (str): The worker's id.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | Problem]
    """

    kwargs = _get_kwargs(
        worker=worker,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    worker: str,
    *,
    client: AuthenticatedClient,
) -> Any | Problem | None:
    """Say a worker stopped

     A worker that drained and stops says so: it is listed as gone (alive false, stopped_at) at once
    instead of after the alive window. A worker that registers again (every start does) is alive.
    Sending it is optional: a worker that dies without it is gone once the alive window passes.

    Needs a key with the `worker` scope.

    Args:
        worker (str): The worker's id.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | Problem
    """

    return (
        await asyncio_detailed(
            worker=worker,
            client=client,
        )
    ).parsed
