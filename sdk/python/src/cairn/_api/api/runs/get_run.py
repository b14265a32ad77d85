from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.run import Run
from ...types import UNSET, Response, Unset


def _get_kwargs(
    run: str,
    *,
    wait_ms: int | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["wait_ms"] = wait_ms

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/api/runs/{run}".format(
            run=quote(str(run), safe=""),
        ),
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Problem | Run | None:
    if response.status_code == 200:
        response_200 = Run.from_dict(response.json())

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
) -> Response[Problem | Run]:
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
    wait_ms: int | Unset = UNSET,
) -> Response[Problem | Run]:
    """Get a run

     The run with every step's status, attempts, output and usage. Audited: the read is recorded with the
    key that made it. With wait_ms the request is held until the run ends (or wait_ms passes: then it
    answers the running run) and audited once, when it answers; a commit on any instance wakes it, and a
    run that changes many times costs no more than once: what a client waiting for a run's outcome
    sends.

    Needs a key with the `read` scope.

    Args:
        run (str): Run id.
        wait_ms (int | Unset): Hold the request until the run ends, up to this long (capped at 4/5
            of the max request time): waiting for a run's outcome in one request. 0 answers at once.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | Run]
    """

    kwargs = _get_kwargs(
        run=run,
        wait_ms=wait_ms,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    run: str,
    *,
    client: AuthenticatedClient,
    wait_ms: int | Unset = UNSET,
) -> Problem | Run | None:
    """Get a run

     The run with every step's status, attempts, output and usage. Audited: the read is recorded with the
    key that made it. With wait_ms the request is held until the run ends (or wait_ms passes: then it
    answers the running run) and audited once, when it answers; a commit on any instance wakes it, and a
    run that changes many times costs no more than once: what a client waiting for a run's outcome
    sends.

    Needs a key with the `read` scope.

    Args:
        run (str): Run id.
        wait_ms (int | Unset): Hold the request until the run ends, up to this long (capped at 4/5
            of the max request time): waiting for a run's outcome in one request. 0 answers at once.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | Run
    """

    return sync_detailed(
        run=run,
        client=client,
        wait_ms=wait_ms,
    ).parsed


async def asyncio_detailed(
    run: str,
    *,
    client: AuthenticatedClient,
    wait_ms: int | Unset = UNSET,
) -> Response[Problem | Run]:
    """Get a run

     The run with every step's status, attempts, output and usage. Audited: the read is recorded with the
    key that made it. With wait_ms the request is held until the run ends (or wait_ms passes: then it
    answers the running run) and audited once, when it answers; a commit on any instance wakes it, and a
    run that changes many times costs no more than once: what a client waiting for a run's outcome
    sends.

    Needs a key with the `read` scope.

    Args:
        run (str): Run id.
        wait_ms (int | Unset): Hold the request until the run ends, up to this long (capped at 4/5
            of the max request time): waiting for a run's outcome in one request. 0 answers at once.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | Run]
    """

    kwargs = _get_kwargs(
        run=run,
        wait_ms=wait_ms,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    run: str,
    *,
    client: AuthenticatedClient,
    wait_ms: int | Unset = UNSET,
) -> Problem | Run | None:
    """Get a run

     The run with every step's status, attempts, output and usage. Audited: the read is recorded with the
    key that made it. With wait_ms the request is held until the run ends (or wait_ms passes: then it
    answers the running run) and audited once, when it answers; a commit on any instance wakes it, and a
    run that changes many times costs no more than once: what a client waiting for a run's outcome
    sends.

    Needs a key with the `read` scope.

    Args:
        run (str): Run id.
        wait_ms (int | Unset): Hold the request until the run ends, up to this long (capped at 4/5
            of the max request time): waiting for a run's outcome in one request. 0 answers at once.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | Run
    """

    return (
        await asyncio_detailed(
            run=run,
            client=client,
            wait_ms=wait_ms,
        )
    ).parsed
