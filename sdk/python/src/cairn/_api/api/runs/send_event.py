from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.event_request import EventRequest
from ...models.event_result import EventResult
from ...models.problem import Problem
from ...types import Response


def _get_kwargs(
    run: str,
    *,
    body: EventRequest,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/api/runs/{run}/events".format(
            run=quote(str(run), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> EventResult | Problem | None:
    if response.status_code == 200:
        response_200 = EventResult.from_dict(response.json())

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
) -> Response[EventResult | Problem]:
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
    body: EventRequest,
) -> Response[EventResult | Problem]:
    """Send an event to a run

     One wait takes the event: the first step, in the definition's order, waiting for its name (and
    matching its if); a wait step completes with the payload as its output. When none waits, the event
    is kept and taken by the next wait for that name. An event is seen by exactly one wait, whatever the
    timing. When no wait step of the run's definition waits for that name at all (likely a typo), the
    event is still kept, and the answer's warning says so. Events to an ended run are a 409.

    Needs a key with the `execute` scope.

    Args:
        run (str):
        body (EventRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[EventResult | Problem]
    """

    kwargs = _get_kwargs(
        run=run,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    run: str,
    *,
    client: AuthenticatedClient,
    body: EventRequest,
) -> EventResult | Problem | None:
    """Send an event to a run

     One wait takes the event: the first step, in the definition's order, waiting for its name (and
    matching its if); a wait step completes with the payload as its output. When none waits, the event
    is kept and taken by the next wait for that name. An event is seen by exactly one wait, whatever the
    timing. When no wait step of the run's definition waits for that name at all (likely a typo), the
    event is still kept, and the answer's warning says so. Events to an ended run are a 409.

    Needs a key with the `execute` scope.

    Args:
        run (str):
        body (EventRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        EventResult | Problem
    """

    return sync_detailed(
        run=run,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    run: str,
    *,
    client: AuthenticatedClient,
    body: EventRequest,
) -> Response[EventResult | Problem]:
    """Send an event to a run

     One wait takes the event: the first step, in the definition's order, waiting for its name (and
    matching its if); a wait step completes with the payload as its output. When none waits, the event
    is kept and taken by the next wait for that name. An event is seen by exactly one wait, whatever the
    timing. When no wait step of the run's definition waits for that name at all (likely a typo), the
    event is still kept, and the answer's warning says so. Events to an ended run are a 409.

    Needs a key with the `execute` scope.

    Args:
        run (str):
        body (EventRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[EventResult | Problem]
    """

    kwargs = _get_kwargs(
        run=run,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    run: str,
    *,
    client: AuthenticatedClient,
    body: EventRequest,
) -> EventResult | Problem | None:
    """Send an event to a run

     One wait takes the event: the first step, in the definition's order, waiting for its name (and
    matching its if); a wait step completes with the payload as its output. When none waits, the event
    is kept and taken by the next wait for that name. An event is seen by exactly one wait, whatever the
    timing. When no wait step of the run's definition waits for that name at all (likely a typo), the
    event is still kept, and the answer's warning says so. Events to an ended run are a 409.

    Needs a key with the `execute` scope.

    Args:
        run (str):
        body (EventRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        EventResult | Problem
    """

    return (
        await asyncio_detailed(
            run=run,
            client=client,
            body=body,
        )
    ).parsed
