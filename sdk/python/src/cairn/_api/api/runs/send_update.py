from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.update import Update
from ...models.update_request import UpdateRequest
from ...types import Response


def _get_kwargs(
    run: str,
    *,
    body: UpdateRequest,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/api/runs/{run}/updates".format(
            run=quote(str(run), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
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
    *,
    client: AuthenticatedClient,
    body: UpdateRequest,
) -> Response[Problem | Update]:
    """Send an update to a run and get its answer

     Sends a request to a live run and holds up to wait_ms for the run's answer: 200 with the update once
    answered (or failed: the step that answers failed, or the run ended first), else 202 with the
    update, to poll at Location. An update is delivered like an event of its name: the first wait step,
    in the definition's order, waiting for it (or a function's wait) takes it, and its answer is the
    output of the step that wait names as its answer (the wait's own output, the update's input, when it
    names none), or what a function replies to it. What cannot be delivered is answered to the caller
    and recorded nowhere: an unknown run is a 404, an ended run a 409, no wait (nor function) of the run
    left to take the name a 422 naming name. Sent again with the same id, the same update is answered
    (delivered once); with another name or input, a 409. Cost: one read and one write of the run record;
    held, one more read (a commit on this instance then answers with none).

    Needs a key with the `execute` scope.

    Args:
        run (str):
        body (UpdateRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | Update]
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
    body: UpdateRequest,
) -> Problem | Update | None:
    """Send an update to a run and get its answer

     Sends a request to a live run and holds up to wait_ms for the run's answer: 200 with the update once
    answered (or failed: the step that answers failed, or the run ended first), else 202 with the
    update, to poll at Location. An update is delivered like an event of its name: the first wait step,
    in the definition's order, waiting for it (or a function's wait) takes it, and its answer is the
    output of the step that wait names as its answer (the wait's own output, the update's input, when it
    names none), or what a function replies to it. What cannot be delivered is answered to the caller
    and recorded nowhere: an unknown run is a 404, an ended run a 409, no wait (nor function) of the run
    left to take the name a 422 naming name. Sent again with the same id, the same update is answered
    (delivered once); with another name or input, a 409. Cost: one read and one write of the run record;
    held, one more read (a commit on this instance then answers with none).

    Needs a key with the `execute` scope.

    Args:
        run (str):
        body (UpdateRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | Update
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
    body: UpdateRequest,
) -> Response[Problem | Update]:
    """Send an update to a run and get its answer

     Sends a request to a live run and holds up to wait_ms for the run's answer: 200 with the update once
    answered (or failed: the step that answers failed, or the run ended first), else 202 with the
    update, to poll at Location. An update is delivered like an event of its name: the first wait step,
    in the definition's order, waiting for it (or a function's wait) takes it, and its answer is the
    output of the step that wait names as its answer (the wait's own output, the update's input, when it
    names none), or what a function replies to it. What cannot be delivered is answered to the caller
    and recorded nowhere: an unknown run is a 404, an ended run a 409, no wait (nor function) of the run
    left to take the name a 422 naming name. Sent again with the same id, the same update is answered
    (delivered once); with another name or input, a 409. Cost: one read and one write of the run record;
    held, one more read (a commit on this instance then answers with none).

    Needs a key with the `execute` scope.

    Args:
        run (str):
        body (UpdateRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | Update]
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
    body: UpdateRequest,
) -> Problem | Update | None:
    """Send an update to a run and get its answer

     Sends a request to a live run and holds up to wait_ms for the run's answer: 200 with the update once
    answered (or failed: the step that answers failed, or the run ended first), else 202 with the
    update, to poll at Location. An update is delivered like an event of its name: the first wait step,
    in the definition's order, waiting for it (or a function's wait) takes it, and its answer is the
    output of the step that wait names as its answer (the wait's own output, the update's input, when it
    names none), or what a function replies to it. What cannot be delivered is answered to the caller
    and recorded nowhere: an unknown run is a 404, an ended run a 409, no wait (nor function) of the run
    left to take the name a 422 naming name. Sent again with the same id, the same update is answered
    (delivered once); with another name or input, a 409. Cost: one read and one write of the run record;
    held, one more read (a commit on this instance then answers with none).

    Needs a key with the `execute` scope.

    Args:
        run (str):
        body (UpdateRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | Update
    """

    return (
        await asyncio_detailed(
            run=run,
            client=client,
            body=body,
        )
    ).parsed
