from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.update import Update
from ...types import UNSET, Response, Unset


def _get_kwargs(
    run: str,
    id: str,
    *,
    wait_ms: int | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["wait_ms"] = wait_ms

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/api/runs/{run}/updates/{id}".format(
            run=quote(str(run), safe=""),
            id=quote(str(id), safe=""),
        ),
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Problem | Update | None:
    if response.status_code == 200:
        response_200 = Update.from_dict(response.json())

        return response_200

    if response.status_code == 202:
        response_202 = Update.from_dict(response.json())

        return response_202

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
) -> Response[Problem | Update]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    run: str,
    id: str,
    *,
    client: AuthenticatedClient,
    wait_ms: int | Unset = UNSET,
) -> Response[Problem | Update]:
    """Get an update sent to a run

     The update and, once it is in, its answer: 200 once answered or failed, 202 while it is not. With
    wait_ms the request is held until it is (one read, then none per commit on this instance). Audited
    like reading the run.

    Needs a key with the `read` scope.

    Args:
        run (str):
        id (str): The update's id.
        wait_ms (int | Unset): Hold the request up to this long (capped at 4/5 of the max request
            time) until the update is answered or failed. 0 answers at once.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | Update]
    """

    kwargs = _get_kwargs(
        run=run,
        id=id,
        wait_ms=wait_ms,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    run: str,
    id: str,
    *,
    client: AuthenticatedClient,
    wait_ms: int | Unset = UNSET,
) -> Problem | Update | None:
    """Get an update sent to a run

     The update and, once it is in, its answer: 200 once answered or failed, 202 while it is not. With
    wait_ms the request is held until it is (one read, then none per commit on this instance). Audited
    like reading the run.

    Needs a key with the `read` scope.

    Args:
        run (str):
        id (str): The update's id.
        wait_ms (int | Unset): Hold the request up to this long (capped at 4/5 of the max request
            time) until the update is answered or failed. 0 answers at once.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | Update
    """

    return sync_detailed(
        run=run,
        id=id,
        client=client,
        wait_ms=wait_ms,
    ).parsed


async def asyncio_detailed(
    run: str,
    id: str,
    *,
    client: AuthenticatedClient,
    wait_ms: int | Unset = UNSET,
) -> Response[Problem | Update]:
    """Get an update sent to a run

     The update and, once it is in, its answer: 200 once answered or failed, 202 while it is not. With
    wait_ms the request is held until it is (one read, then none per commit on this instance). Audited
    like reading the run.

    Needs a key with the `read` scope.

    Args:
        run (str):
        id (str): The update's id.
        wait_ms (int | Unset): Hold the request up to this long (capped at 4/5 of the max request
            time) until the update is answered or failed. 0 answers at once.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | Update]
    """

    kwargs = _get_kwargs(
        run=run,
        id=id,
        wait_ms=wait_ms,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    run: str,
    id: str,
    *,
    client: AuthenticatedClient,
    wait_ms: int | Unset = UNSET,
) -> Problem | Update | None:
    """Get an update sent to a run

     The update and, once it is in, its answer: 200 once answered or failed, 202 while it is not. With
    wait_ms the request is held until it is (one read, then none per commit on this instance). Audited
    like reading the run.

    Needs a key with the `read` scope.

    Args:
        run (str):
        id (str): The update's id.
        wait_ms (int | Unset): Hold the request up to this long (capped at 4/5 of the max request
            time) until the update is answered or failed. 0 answers at once.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | Update
    """

    return (
        await asyncio_detailed(
            run=run,
            id=id,
            client=client,
            wait_ms=wait_ms,
        )
    ).parsed
