from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.rerun_request import RerunRequest
from ...models.start_result import StartResult
from ...types import Response


def _get_kwargs(
    run: str,
    *,
    body: RerunRequest,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/api/runs/{run}/rerun".format(
            run=quote(str(run), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Problem | StartResult | None:
    if response.status_code == 201:
        response_201 = StartResult.from_dict(response.json())

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
) -> Response[Problem | StartResult]:
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
    body: RerunRequest,
) -> Response[Problem | StartResult]:
    """Rerun an ended run

     Starts a new run of the ended run's workflow version, with its input, correlation, search attributes
    and final state, in which every step that completed (except from_step and the steps after it) is
    already completed with its old output, and the rest run again. The new run's rerun_of names the old
    one, which is not changed. Rerunning a running run is a 409.

    Needs a key with the `execute` scope.

    Args:
        run (str): The ended run to rerun.
        body (RerunRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | StartResult]
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
    body: RerunRequest,
) -> Problem | StartResult | None:
    """Rerun an ended run

     Starts a new run of the ended run's workflow version, with its input, correlation, search attributes
    and final state, in which every step that completed (except from_step and the steps after it) is
    already completed with its old output, and the rest run again. The new run's rerun_of names the old
    one, which is not changed. Rerunning a running run is a 409.

    Needs a key with the `execute` scope.

    Args:
        run (str): The ended run to rerun.
        body (RerunRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | StartResult
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
    body: RerunRequest,
) -> Response[Problem | StartResult]:
    """Rerun an ended run

     Starts a new run of the ended run's workflow version, with its input, correlation, search attributes
    and final state, in which every step that completed (except from_step and the steps after it) is
    already completed with its old output, and the rest run again. The new run's rerun_of names the old
    one, which is not changed. Rerunning a running run is a 409.

    Needs a key with the `execute` scope.

    Args:
        run (str): The ended run to rerun.
        body (RerunRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | StartResult]
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
    body: RerunRequest,
) -> Problem | StartResult | None:
    """Rerun an ended run

     Starts a new run of the ended run's workflow version, with its input, correlation, search attributes
    and final state, in which every step that completed (except from_step and the steps after it) is
    already completed with its old output, and the rest run again. The new run's rerun_of names the old
    one, which is not changed. Rerunning a running run is a 409.

    Needs a key with the `execute` scope.

    Args:
        run (str): The ended run to rerun.
        body (RerunRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | StartResult
    """

    return (
        await asyncio_detailed(
            run=run,
            client=client,
            body=body,
        )
    ).parsed
