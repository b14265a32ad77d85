from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.schedule import Schedule
from ...models.schedule_request import ScheduleRequest
from ...types import Response


def _get_kwargs(
    *,
    body: ScheduleRequest,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/api/schedules",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Problem | Schedule | None:
    if response.status_code == 201:
        response_201 = Schedule.from_dict(response.json())

        return response_201

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
) -> Response[Problem | Schedule]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    body: ScheduleRequest,
) -> Response[Problem | Schedule]:
    """Create a schedule

     Starts a run of the workflow at every tick of a cron expression in a time zone. The reaper fires due
    ticks: one run per tick however many reapers run (each tick's run has an idempotency key derived
    from the schedule and the tick). Ticks missed while no reaper ran fire once (the newest); backfill
    the others. An id that exists is a 409.

    Needs a key with the `execute` scope.

    Args:
        body (ScheduleRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | Schedule]
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
    body: ScheduleRequest,
) -> Problem | Schedule | None:
    """Create a schedule

     Starts a run of the workflow at every tick of a cron expression in a time zone. The reaper fires due
    ticks: one run per tick however many reapers run (each tick's run has an idempotency key derived
    from the schedule and the tick). Ticks missed while no reaper ran fire once (the newest); backfill
    the others. An id that exists is a 409.

    Needs a key with the `execute` scope.

    Args:
        body (ScheduleRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | Schedule
    """

    return sync_detailed(
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    body: ScheduleRequest,
) -> Response[Problem | Schedule]:
    """Create a schedule

     Starts a run of the workflow at every tick of a cron expression in a time zone. The reaper fires due
    ticks: one run per tick however many reapers run (each tick's run has an idempotency key derived
    from the schedule and the tick). Ticks missed while no reaper ran fire once (the newest); backfill
    the others. An id that exists is a 409.

    Needs a key with the `execute` scope.

    Args:
        body (ScheduleRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | Schedule]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    body: ScheduleRequest,
) -> Problem | Schedule | None:
    """Create a schedule

     Starts a run of the workflow at every tick of a cron expression in a time zone. The reaper fires due
    ticks: one run per tick however many reapers run (each tick's run has an idempotency key derived
    from the schedule and the tick). Ticks missed while no reaper ran fire once (the newest); backfill
    the others. An id that exists is a 409.

    Needs a key with the `execute` scope.

    Args:
        body (ScheduleRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | Schedule
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
        )
    ).parsed
