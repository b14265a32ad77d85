from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.stream_run_event_end import StreamRunEventEnd
from ...models.stream_run_event_journal import StreamRunEventJournal
from ...models.stream_run_event_progress import StreamRunEventProgress
from ...models.stream_run_event_status import StreamRunEventStatus
from ...types import UNSET, Response, Unset


def _get_kwargs(
    run: str,
    *,
    last_event_id: str | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(last_event_id, Unset):
        headers["Last-Event-ID"] = last_event_id

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/api/runs/{run}/stream".format(
            run=quote(str(run), safe=""),
        ),
    }

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> (
    Problem
    | StreamRunEventEnd
    | StreamRunEventJournal
    | StreamRunEventProgress
    | StreamRunEventStatus
    | None
):
    if response.status_code == 200:

        def _parse_response_200(
            data: object,
        ) -> (
            StreamRunEventEnd
            | StreamRunEventJournal
            | StreamRunEventProgress
            | StreamRunEventStatus
        ):
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                response_200_event_status = StreamRunEventStatus.from_dict(data)

                return response_200_event_status
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                response_200_event_journal = StreamRunEventJournal.from_dict(data)

                return response_200_event_journal
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                response_200_event_progress = StreamRunEventProgress.from_dict(data)

                return response_200_event_progress
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            if not isinstance(data, dict):
                raise TypeError()
            response_200_event_end = StreamRunEventEnd.from_dict(data)

            return response_200_event_end

        response_200 = _parse_response_200(response.text)

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
) -> Response[
    Problem
    | StreamRunEventEnd
    | StreamRunEventJournal
    | StreamRunEventProgress
    | StreamRunEventStatus
]:
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
    last_event_id: str | Unset = UNSET,
) -> Response[
    Problem
    | StreamRunEventEnd
    | StreamRunEventJournal
    | StreamRunEventProgress
    | StreamRunEventStatus
]:
    """Follow a run as Server-Sent Events

     Events: status (the run's progress, at each change), journal (each new journal entry), progress (a
    step body's progress values, live only: missed while disconnected is not replayed; from another
    instance only over a fan-out notification bus), end (the final status; the stream then closes).
    Status and journal events carry an id (rev.seq); a client that reconnects with Last-Event-ID gets
    the status if it changed and the journal entries after seq. A stream lasts at most 4/5 of the
    server's request limit, then closes: reconnect. Idle streams send a comment every 15 s. Audited once
    per connection, like the journal.

    Needs a key with the `read` scope.

    Args:
        run (str): Run id.
        last_event_id (str | Unset): The id of the last status or journal event received
            (rev.seq): the stream resumes after it. Progress is not replayed.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | StreamRunEventEnd | StreamRunEventJournal | StreamRunEventProgress | StreamRunEventStatus]
    """

    kwargs = _get_kwargs(
        run=run,
        last_event_id=last_event_id,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    run: str,
    *,
    client: AuthenticatedClient,
    last_event_id: str | Unset = UNSET,
) -> (
    Problem
    | StreamRunEventEnd
    | StreamRunEventJournal
    | StreamRunEventProgress
    | StreamRunEventStatus
    | None
):
    """Follow a run as Server-Sent Events

     Events: status (the run's progress, at each change), journal (each new journal entry), progress (a
    step body's progress values, live only: missed while disconnected is not replayed; from another
    instance only over a fan-out notification bus), end (the final status; the stream then closes).
    Status and journal events carry an id (rev.seq); a client that reconnects with Last-Event-ID gets
    the status if it changed and the journal entries after seq. A stream lasts at most 4/5 of the
    server's request limit, then closes: reconnect. Idle streams send a comment every 15 s. Audited once
    per connection, like the journal.

    Needs a key with the `read` scope.

    Args:
        run (str): Run id.
        last_event_id (str | Unset): The id of the last status or journal event received
            (rev.seq): the stream resumes after it. Progress is not replayed.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | StreamRunEventEnd | StreamRunEventJournal | StreamRunEventProgress | StreamRunEventStatus
    """

    return sync_detailed(
        run=run,
        client=client,
        last_event_id=last_event_id,
    ).parsed


async def asyncio_detailed(
    run: str,
    *,
    client: AuthenticatedClient,
    last_event_id: str | Unset = UNSET,
) -> Response[
    Problem
    | StreamRunEventEnd
    | StreamRunEventJournal
    | StreamRunEventProgress
    | StreamRunEventStatus
]:
    """Follow a run as Server-Sent Events

     Events: status (the run's progress, at each change), journal (each new journal entry), progress (a
    step body's progress values, live only: missed while disconnected is not replayed; from another
    instance only over a fan-out notification bus), end (the final status; the stream then closes).
    Status and journal events carry an id (rev.seq); a client that reconnects with Last-Event-ID gets
    the status if it changed and the journal entries after seq. A stream lasts at most 4/5 of the
    server's request limit, then closes: reconnect. Idle streams send a comment every 15 s. Audited once
    per connection, like the journal.

    Needs a key with the `read` scope.

    Args:
        run (str): Run id.
        last_event_id (str | Unset): The id of the last status or journal event received
            (rev.seq): the stream resumes after it. Progress is not replayed.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | StreamRunEventEnd | StreamRunEventJournal | StreamRunEventProgress | StreamRunEventStatus]
    """

    kwargs = _get_kwargs(
        run=run,
        last_event_id=last_event_id,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    run: str,
    *,
    client: AuthenticatedClient,
    last_event_id: str | Unset = UNSET,
) -> (
    Problem
    | StreamRunEventEnd
    | StreamRunEventJournal
    | StreamRunEventProgress
    | StreamRunEventStatus
    | None
):
    """Follow a run as Server-Sent Events

     Events: status (the run's progress, at each change), journal (each new journal entry), progress (a
    step body's progress values, live only: missed while disconnected is not replayed; from another
    instance only over a fan-out notification bus), end (the final status; the stream then closes).
    Status and journal events carry an id (rev.seq); a client that reconnects with Last-Event-ID gets
    the status if it changed and the journal entries after seq. A stream lasts at most 4/5 of the
    server's request limit, then closes: reconnect. Idle streams send a comment every 15 s. Audited once
    per connection, like the journal.

    Needs a key with the `read` scope.

    Args:
        run (str): Run id.
        last_event_id (str | Unset): The id of the last status or journal event received
            (rev.seq): the stream resumes after it. Progress is not replayed.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | StreamRunEventEnd | StreamRunEventJournal | StreamRunEventProgress | StreamRunEventStatus
    """

    return (
        await asyncio_detailed(
            run=run,
            client=client,
            last_event_id=last_event_id,
        )
    ).parsed
