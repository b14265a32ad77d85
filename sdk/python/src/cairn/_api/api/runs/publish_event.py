from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.publish_request import PublishRequest
from ...models.publish_result import PublishResult
from ...types import Response


def _get_kwargs(
    *,
    body: PublishRequest,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/api/events",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Problem | PublishResult | None:
    if response.status_code == 200:
        response_200 = PublishResult.from_dict(response.json())

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
) -> Response[Problem | PublishResult]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    body: PublishRequest,
) -> Response[Problem | PublishResult]:
    """Publish an event

     Starts a run of every workflow whose newest registered version declares a trigger (on) of the
    event's name whose if the event matches, with the payload as the run's input and the event's name
    and id on the run (its event). Once per event id and workflow: a retried publish answers the runs
    the first started, marked existed. At most 100 workflows are matched per event (truncated says when
    more have a trigger of its name). Cost: one LIST of the event's trigger index, then per matched
    workflow a start (three writes; a retry: one refused create and two reads). A publish that fails
    part-way is retried with its id. A workflow with debounce or batch gets no run at once: the event
    joins its key's window (answered as window), whose run starts when it closes (1 read and 1 create
    more per such workflow; docs/API.md).

    Needs a key with the `execute` scope.

    Args:
        body (PublishRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | PublishResult]
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
    body: PublishRequest,
) -> Problem | PublishResult | None:
    """Publish an event

     Starts a run of every workflow whose newest registered version declares a trigger (on) of the
    event's name whose if the event matches, with the payload as the run's input and the event's name
    and id on the run (its event). Once per event id and workflow: a retried publish answers the runs
    the first started, marked existed. At most 100 workflows are matched per event (truncated says when
    more have a trigger of its name). Cost: one LIST of the event's trigger index, then per matched
    workflow a start (three writes; a retry: one refused create and two reads). A publish that fails
    part-way is retried with its id. A workflow with debounce or batch gets no run at once: the event
    joins its key's window (answered as window), whose run starts when it closes (1 read and 1 create
    more per such workflow; docs/API.md).

    Needs a key with the `execute` scope.

    Args:
        body (PublishRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | PublishResult
    """

    return sync_detailed(
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    body: PublishRequest,
) -> Response[Problem | PublishResult]:
    """Publish an event

     Starts a run of every workflow whose newest registered version declares a trigger (on) of the
    event's name whose if the event matches, with the payload as the run's input and the event's name
    and id on the run (its event). Once per event id and workflow: a retried publish answers the runs
    the first started, marked existed. At most 100 workflows are matched per event (truncated says when
    more have a trigger of its name). Cost: one LIST of the event's trigger index, then per matched
    workflow a start (three writes; a retry: one refused create and two reads). A publish that fails
    part-way is retried with its id. A workflow with debounce or batch gets no run at once: the event
    joins its key's window (answered as window), whose run starts when it closes (1 read and 1 create
    more per such workflow; docs/API.md).

    Needs a key with the `execute` scope.

    Args:
        body (PublishRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | PublishResult]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    body: PublishRequest,
) -> Problem | PublishResult | None:
    """Publish an event

     Starts a run of every workflow whose newest registered version declares a trigger (on) of the
    event's name whose if the event matches, with the payload as the run's input and the event's name
    and id on the run (its event). Once per event id and workflow: a retried publish answers the runs
    the first started, marked existed. At most 100 workflows are matched per event (truncated says when
    more have a trigger of its name). Cost: one LIST of the event's trigger index, then per matched
    workflow a start (three writes; a retry: one refused create and two reads). A publish that fails
    part-way is retried with its id. A workflow with debounce or batch gets no run at once: the event
    joins its key's window (answered as window), whose run starts when it closes (1 read and 1 create
    more per such workflow; docs/API.md).

    Needs a key with the `execute` scope.

    Args:
        body (PublishRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | PublishResult
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
        )
    ).parsed
