from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.ended import Ended
from ...models.interrupt_request import InterruptRequest
from ...models.problem import Problem
from ...types import Response


def _get_kwargs(
    lease: str,
    *,
    body: InterruptRequest,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/api/steps/{lease}/interrupt".format(
            lease=quote(str(lease), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Ended | Problem | None:
    if response.status_code == 200:
        response_200 = Ended.from_dict(response.json())

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
) -> Response[Ended | Problem]:
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
    body: InterruptRequest,
) -> Response[Ended | Problem]:
    """End a step's attempt by interrupting it

     The body stops and asks for input: the step's status becomes interrupted with the payload, no
    attempt is offered and no retry budget is spent until someone resumes it (POST
    /runs/{run}/steps/{step}/resume); the next attempt's lease then carries resumed, resume and
    interrupt. The state patch and usage are applied as a complete's. Refused like complete
    (already_applied, fenced, run_terminal, not_started); an item of a map step cannot interrupt (422).

    Needs a key with the `worker` scope.

    Args:
        lease (str):
        body (InterruptRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Ended | Problem]
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
    body: InterruptRequest,
) -> Ended | Problem | None:
    """End a step's attempt by interrupting it

     The body stops and asks for input: the step's status becomes interrupted with the payload, no
    attempt is offered and no retry budget is spent until someone resumes it (POST
    /runs/{run}/steps/{step}/resume); the next attempt's lease then carries resumed, resume and
    interrupt. The state patch and usage are applied as a complete's. Refused like complete
    (already_applied, fenced, run_terminal, not_started); an item of a map step cannot interrupt (422).

    Needs a key with the `worker` scope.

    Args:
        lease (str):
        body (InterruptRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Ended | Problem
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
    body: InterruptRequest,
) -> Response[Ended | Problem]:
    """End a step's attempt by interrupting it

     The body stops and asks for input: the step's status becomes interrupted with the payload, no
    attempt is offered and no retry budget is spent until someone resumes it (POST
    /runs/{run}/steps/{step}/resume); the next attempt's lease then carries resumed, resume and
    interrupt. The state patch and usage are applied as a complete's. Refused like complete
    (already_applied, fenced, run_terminal, not_started); an item of a map step cannot interrupt (422).

    Needs a key with the `worker` scope.

    Args:
        lease (str):
        body (InterruptRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Ended | Problem]
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
    body: InterruptRequest,
) -> Ended | Problem | None:
    """End a step's attempt by interrupting it

     The body stops and asks for input: the step's status becomes interrupted with the payload, no
    attempt is offered and no retry budget is spent until someone resumes it (POST
    /runs/{run}/steps/{step}/resume); the next attempt's lease then carries resumed, resume and
    interrupt. The state patch and usage are applied as a complete's. Refused like complete
    (already_applied, fenced, run_terminal, not_started); an item of a map step cannot interrupt (422).

    Needs a key with the `worker` scope.

    Args:
        lease (str):
        body (InterruptRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Ended | Problem
    """

    return (
        await asyncio_detailed(
            lease=lease,
            client=client,
            body=body,
        )
    ).parsed
