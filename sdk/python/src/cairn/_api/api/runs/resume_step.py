from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.resume_step_request import ResumeStepRequest
from ...models.run import Run
from ...types import Response


def _get_kwargs(
    run: str,
    step: str,
    *,
    body: ResumeStepRequest,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/api/runs/{run}/steps/{step}/resume".format(
            run=quote(str(run), safe=""),
            step=quote(str(step), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Problem | Run | None:
    if response.status_code == 200:
        response_200 = Run.from_dict(response.json())

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
) -> Response[Problem | Run]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    run: str,
    step: str,
    *,
    client: AuthenticatedClient,
    body: ResumeStepRequest,
) -> Response[Problem | Run]:
    """Resume an interrupted step

     Answers a step whose body interrupted: its next attempt is offered at once (at the run's resume when
    the run is paused), and its lease carries resumed true, the value as resume and the payload as
    interrupt. Resuming again with the value the step was resumed with changes nothing; resuming a step
    that is not interrupted, or a run that ended, is a 409. Recorded in the journal with the key that
    resumed it; the answer (the run) is audited like getRun.

    Needs a key with the `execute` scope.

    Args:
        run (str): Run id.
        step (str): Step id.
        body (ResumeStepRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | Run]
    """

    kwargs = _get_kwargs(
        run=run,
        step=step,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    run: str,
    step: str,
    *,
    client: AuthenticatedClient,
    body: ResumeStepRequest,
) -> Problem | Run | None:
    """Resume an interrupted step

     Answers a step whose body interrupted: its next attempt is offered at once (at the run's resume when
    the run is paused), and its lease carries resumed true, the value as resume and the payload as
    interrupt. Resuming again with the value the step was resumed with changes nothing; resuming a step
    that is not interrupted, or a run that ended, is a 409. Recorded in the journal with the key that
    resumed it; the answer (the run) is audited like getRun.

    Needs a key with the `execute` scope.

    Args:
        run (str): Run id.
        step (str): Step id.
        body (ResumeStepRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | Run
    """

    return sync_detailed(
        run=run,
        step=step,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    run: str,
    step: str,
    *,
    client: AuthenticatedClient,
    body: ResumeStepRequest,
) -> Response[Problem | Run]:
    """Resume an interrupted step

     Answers a step whose body interrupted: its next attempt is offered at once (at the run's resume when
    the run is paused), and its lease carries resumed true, the value as resume and the payload as
    interrupt. Resuming again with the value the step was resumed with changes nothing; resuming a step
    that is not interrupted, or a run that ended, is a 409. Recorded in the journal with the key that
    resumed it; the answer (the run) is audited like getRun.

    Needs a key with the `execute` scope.

    Args:
        run (str): Run id.
        step (str): Step id.
        body (ResumeStepRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | Run]
    """

    kwargs = _get_kwargs(
        run=run,
        step=step,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    run: str,
    step: str,
    *,
    client: AuthenticatedClient,
    body: ResumeStepRequest,
) -> Problem | Run | None:
    """Resume an interrupted step

     Answers a step whose body interrupted: its next attempt is offered at once (at the run's resume when
    the run is paused), and its lease carries resumed true, the value as resume and the payload as
    interrupt. Resuming again with the value the step was resumed with changes nothing; resuming a step
    that is not interrupted, or a run that ended, is a 409. Recorded in the journal with the key that
    resumed it; the answer (the run) is audited like getRun.

    Needs a key with the `execute` scope.

    Args:
        run (str): Run id.
        step (str): Step id.
        body (ResumeStepRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | Run
    """

    return (
        await asyncio_detailed(
            run=run,
            step=step,
            client=client,
            body=body,
        )
    ).parsed
