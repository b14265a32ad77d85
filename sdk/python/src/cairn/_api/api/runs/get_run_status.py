from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.run_progress import RunProgress
from ...types import UNSET, Response, Unset


def _get_kwargs(
    run: str,
    *,
    after: int | Unset = UNSET,
    wait_ms: int | Unset = UNSET,
    holders: bool | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["after"] = after

    params["wait_ms"] = wait_ms

    params["holders"] = holders

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/api/runs/{run}/status".format(
            run=quote(str(run), safe=""),
        ),
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Problem | RunProgress | None:
    if response.status_code == 200:
        response_200 = RunProgress.from_dict(response.json())

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
) -> Response[Problem | RunProgress]:
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
    after: int | Unset = UNSET,
    wait_ms: int | Unset = UNSET,
    holders: bool | Unset = UNSET,
) -> Response[Problem | RunProgress]:
    """Get a run's progress, optionally waiting for a change

     Status and per-step progress without the run's contents (no input, outputs or state), so it is not
    audited: what watchers follow. With wait_ms, the request is held until the run's rev exceeds after
    or the run ends (capped like a claim); a commit on any instance wakes it (pushed over the bus, no
    polling).

    Needs a key with the `read` scope.

    Args:
        run (str):
        after (int | Unset): Wait for a rev greater than this.
        wait_ms (int | Unset): Hold up to this long for a change (capped at 4/5 of the max request
            time).
        holders (bool | Unset): Also read who holds each ready task step (one lease read per ready
            step, at most 100): what a live progress display asks for; a claim does not change the
            run's rev, so it does not end a wait.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | RunProgress]
    """

    kwargs = _get_kwargs(
        run=run,
        after=after,
        wait_ms=wait_ms,
        holders=holders,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    run: str,
    *,
    client: AuthenticatedClient,
    after: int | Unset = UNSET,
    wait_ms: int | Unset = UNSET,
    holders: bool | Unset = UNSET,
) -> Problem | RunProgress | None:
    """Get a run's progress, optionally waiting for a change

     Status and per-step progress without the run's contents (no input, outputs or state), so it is not
    audited: what watchers follow. With wait_ms, the request is held until the run's rev exceeds after
    or the run ends (capped like a claim); a commit on any instance wakes it (pushed over the bus, no
    polling).

    Needs a key with the `read` scope.

    Args:
        run (str):
        after (int | Unset): Wait for a rev greater than this.
        wait_ms (int | Unset): Hold up to this long for a change (capped at 4/5 of the max request
            time).
        holders (bool | Unset): Also read who holds each ready task step (one lease read per ready
            step, at most 100): what a live progress display asks for; a claim does not change the
            run's rev, so it does not end a wait.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | RunProgress
    """

    return sync_detailed(
        run=run,
        client=client,
        after=after,
        wait_ms=wait_ms,
        holders=holders,
    ).parsed


async def asyncio_detailed(
    run: str,
    *,
    client: AuthenticatedClient,
    after: int | Unset = UNSET,
    wait_ms: int | Unset = UNSET,
    holders: bool | Unset = UNSET,
) -> Response[Problem | RunProgress]:
    """Get a run's progress, optionally waiting for a change

     Status and per-step progress without the run's contents (no input, outputs or state), so it is not
    audited: what watchers follow. With wait_ms, the request is held until the run's rev exceeds after
    or the run ends (capped like a claim); a commit on any instance wakes it (pushed over the bus, no
    polling).

    Needs a key with the `read` scope.

    Args:
        run (str):
        after (int | Unset): Wait for a rev greater than this.
        wait_ms (int | Unset): Hold up to this long for a change (capped at 4/5 of the max request
            time).
        holders (bool | Unset): Also read who holds each ready task step (one lease read per ready
            step, at most 100): what a live progress display asks for; a claim does not change the
            run's rev, so it does not end a wait.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | RunProgress]
    """

    kwargs = _get_kwargs(
        run=run,
        after=after,
        wait_ms=wait_ms,
        holders=holders,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    run: str,
    *,
    client: AuthenticatedClient,
    after: int | Unset = UNSET,
    wait_ms: int | Unset = UNSET,
    holders: bool | Unset = UNSET,
) -> Problem | RunProgress | None:
    """Get a run's progress, optionally waiting for a change

     Status and per-step progress without the run's contents (no input, outputs or state), so it is not
    audited: what watchers follow. With wait_ms, the request is held until the run's rev exceeds after
    or the run ends (capped like a claim); a commit on any instance wakes it (pushed over the bus, no
    polling).

    Needs a key with the `read` scope.

    Args:
        run (str):
        after (int | Unset): Wait for a rev greater than this.
        wait_ms (int | Unset): Hold up to this long for a change (capped at 4/5 of the max request
            time).
        holders (bool | Unset): Also read who holds each ready task step (one lease read per ready
            step, at most 100): what a live progress display asks for; a claim does not change the
            run's rev, so it does not end a wait.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | RunProgress
    """

    return (
        await asyncio_detailed(
            run=run,
            client=client,
            after=after,
            wait_ms=wait_ms,
            holders=holders,
        )
    ).parsed
