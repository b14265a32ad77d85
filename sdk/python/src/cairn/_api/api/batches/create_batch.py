from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.batch import Batch
from ...models.batch_request import BatchRequest
from ...models.problem import Problem
from ...types import Response


def _get_kwargs(
    *,
    body: BatchRequest,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/api/batches",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Batch | Problem | None:
    if response.status_code == 202:
        response_202 = Batch.from_dict(response.json())

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
) -> Response[Batch | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    body: BatchRequest,
) -> Response[Batch | Problem]:
    """Cancel, rerun, pause or resume every run matching a filter

     Starts a batch job over the runs matching the filter (status, workflow, start time; at least one),
    newest first: cancel each running (or paused) one, rerun each ended one (once, with the idempotency
    key batch:<id>:<run>), pause each running one, or resume each paused one. The call does the first
    page of 100 runs and answers with the batch; the reaper does the rest, 500 runs a pass, and any
    instance or reaper goes on where a dead one stopped. Follow it with getBatch.

    Needs a key with the `execute` scope.

    Args:
        body (BatchRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Batch | Problem]
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
    body: BatchRequest,
) -> Batch | Problem | None:
    """Cancel, rerun, pause or resume every run matching a filter

     Starts a batch job over the runs matching the filter (status, workflow, start time; at least one),
    newest first: cancel each running (or paused) one, rerun each ended one (once, with the idempotency
    key batch:<id>:<run>), pause each running one, or resume each paused one. The call does the first
    page of 100 runs and answers with the batch; the reaper does the rest, 500 runs a pass, and any
    instance or reaper goes on where a dead one stopped. Follow it with getBatch.

    Needs a key with the `execute` scope.

    Args:
        body (BatchRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Batch | Problem
    """

    return sync_detailed(
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    body: BatchRequest,
) -> Response[Batch | Problem]:
    """Cancel, rerun, pause or resume every run matching a filter

     Starts a batch job over the runs matching the filter (status, workflow, start time; at least one),
    newest first: cancel each running (or paused) one, rerun each ended one (once, with the idempotency
    key batch:<id>:<run>), pause each running one, or resume each paused one. The call does the first
    page of 100 runs and answers with the batch; the reaper does the rest, 500 runs a pass, and any
    instance or reaper goes on where a dead one stopped. Follow it with getBatch.

    Needs a key with the `execute` scope.

    Args:
        body (BatchRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Batch | Problem]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    body: BatchRequest,
) -> Batch | Problem | None:
    """Cancel, rerun, pause or resume every run matching a filter

     Starts a batch job over the runs matching the filter (status, workflow, start time; at least one),
    newest first: cancel each running (or paused) one, rerun each ended one (once, with the idempotency
    key batch:<id>:<run>), pause each running one, or resume each paused one. The call does the first
    page of 100 runs and answers with the batch; the reaper does the rest, 500 runs a pass, and any
    instance or reaper goes on where a dead one stopped. Follow it with getBatch.

    Needs a key with the `execute` scope.

    Args:
        body (BatchRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Batch | Problem
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
        )
    ).parsed
