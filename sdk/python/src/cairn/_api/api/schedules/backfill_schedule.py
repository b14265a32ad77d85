from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.backfill_request import BackfillRequest
from ...models.backfill_result import BackfillResult
from ...models.problem import Problem
from ...types import Response


def _get_kwargs(
    schedule: str,
    *,
    body: BackfillRequest,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/api/schedules/{schedule}/backfill".format(
            schedule=quote(str(schedule), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> BackfillResult | Problem | None:
    if response.status_code == 200:
        response_200 = BackfillResult.from_dict(response.json())

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

    if response.status_code == 404:
        response_404 = Problem.from_dict(response.json())

        return response_404

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
) -> Response[BackfillResult | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    schedule: str,
    *,
    client: AuthenticatedClient,
    body: BackfillRequest,
) -> Response[BackfillResult | Problem]:
    """Start the runs of past ticks

     Starts a run for each tick in (from, to], oldest first, at most max (100). A tick that already has
    its run (it fired, or an earlier backfill) is not started again: it is listed with existed=true.
    Backfill ignores the overlap policy and a pause.

    Needs a key with the `execute` scope.

    Args:
        schedule (str): Schedule id.
        body (BackfillRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[BackfillResult | Problem]
    """

    kwargs = _get_kwargs(
        schedule=schedule,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    schedule: str,
    *,
    client: AuthenticatedClient,
    body: BackfillRequest,
) -> BackfillResult | Problem | None:
    """Start the runs of past ticks

     Starts a run for each tick in (from, to], oldest first, at most max (100). A tick that already has
    its run (it fired, or an earlier backfill) is not started again: it is listed with existed=true.
    Backfill ignores the overlap policy and a pause.

    Needs a key with the `execute` scope.

    Args:
        schedule (str): Schedule id.
        body (BackfillRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        BackfillResult | Problem
    """

    return sync_detailed(
        schedule=schedule,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    schedule: str,
    *,
    client: AuthenticatedClient,
    body: BackfillRequest,
) -> Response[BackfillResult | Problem]:
    """Start the runs of past ticks

     Starts a run for each tick in (from, to], oldest first, at most max (100). A tick that already has
    its run (it fired, or an earlier backfill) is not started again: it is listed with existed=true.
    Backfill ignores the overlap policy and a pause.

    Needs a key with the `execute` scope.

    Args:
        schedule (str): Schedule id.
        body (BackfillRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[BackfillResult | Problem]
    """

    kwargs = _get_kwargs(
        schedule=schedule,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    schedule: str,
    *,
    client: AuthenticatedClient,
    body: BackfillRequest,
) -> BackfillResult | Problem | None:
    """Start the runs of past ticks

     Starts a run for each tick in (from, to], oldest first, at most max (100). A tick that already has
    its run (it fired, or an earlier backfill) is not started again: it is listed with existed=true.
    Backfill ignores the overlap policy and a pause.

    Needs a key with the `execute` scope.

    Args:
        schedule (str): Schedule id.
        body (BackfillRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        BackfillResult | Problem
    """

    return (
        await asyncio_detailed(
            schedule=schedule,
            client=client,
            body=body,
        )
    ).parsed
