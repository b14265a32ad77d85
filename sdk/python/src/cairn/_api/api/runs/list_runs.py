import datetime
from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.list_runs_status import ListRunsStatus
from ...models.problem import Problem
from ...models.run_page import RunPage
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    workflow: str | Unset = UNSET,
    status: ListRunsStatus | Unset = UNSET,
    correlation: str | Unset = UNSET,
    id_prefix: str | Unset = UNSET,
    started_after: datetime.datetime | Unset = UNSET,
    started_before: datetime.datetime | Unset = UNSET,
    attr: list[str] | None | Unset = UNSET,
    limit: int | Unset = 50,
    cursor: str | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["workflow"] = workflow

    json_status: str | Unset = UNSET
    if not isinstance(status, Unset):
        json_status = status.value

    params["status"] = json_status

    params["correlation"] = correlation

    params["id_prefix"] = id_prefix

    json_started_after: str | Unset = UNSET
    if not isinstance(started_after, Unset):
        json_started_after = started_after.isoformat()
    params["started_after"] = json_started_after

    json_started_before: str | Unset = UNSET
    if not isinstance(started_before, Unset):
        json_started_before = started_before.isoformat()
    params["started_before"] = json_started_before

    json_attr: list[str] | None | Unset
    if isinstance(attr, Unset):
        json_attr = UNSET
    elif isinstance(attr, list):
        json_attr = attr

    else:
        json_attr = attr
    params["attr"] = json_attr

    params["limit"] = limit

    params["cursor"] = cursor

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/api/runs",
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Problem | RunPage | None:
    if response.status_code == 200:
        response_200 = RunPage.from_dict(response.json())

        return response_200

    if response.status_code == 401:
        response_401 = Problem.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = Problem.from_dict(response.json())

        return response_403

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
) -> Response[Problem | RunPage]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    workflow: str | Unset = UNSET,
    status: ListRunsStatus | Unset = UNSET,
    correlation: str | Unset = UNSET,
    id_prefix: str | Unset = UNSET,
    started_after: datetime.datetime | Unset = UNSET,
    started_before: datetime.datetime | Unset = UNSET,
    attr: list[str] | None | Unset = UNSET,
    limit: int | Unset = 50,
    cursor: str | Unset = UNSET,
) -> Response[Problem | RunPage]:
    """List runs, newest first

     Cursor-paginated. Filters apply to each page read, so a filtered page may hold fewer runs than limit
    and still have a next_cursor.

    Needs a key with the `read` scope.

    Args:
        workflow (str | Unset): Only runs of this workflow.
        status (ListRunsStatus | Unset): Only runs in this status.
        correlation (str | Unset): Only runs started with this correlation.
        id_prefix (str | Unset): Only runs whose id starts with this.
        started_after (datetime.datetime | Unset): Only runs started at or after this time (RFC
            3339).
        started_before (datetime.datetime | Unset): Only runs started before this time (RFC 3339).
        attr (list[str] | None | Unset): Only runs whose search attribute satisfies this
            condition: name:value (equal), name>value, name>=value, name<value or name<=value. Repeat
            for several (all must hold). A value is typed as attributes are: true/false a boolean, a
            number a number, an RFC 3339 time a time, anything else (or "quoted") a string. The
            listing reads the attribute index of the first condition's name: its runs come by value,
            then newest first (an equality: newest first).
        limit (int | Unset): Runs read per page. Default: 50.
        cursor (str | Unset): next_cursor of the previous page (opaque, base64url).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | RunPage]
    """

    kwargs = _get_kwargs(
        workflow=workflow,
        status=status,
        correlation=correlation,
        id_prefix=id_prefix,
        started_after=started_after,
        started_before=started_before,
        attr=attr,
        limit=limit,
        cursor=cursor,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    workflow: str | Unset = UNSET,
    status: ListRunsStatus | Unset = UNSET,
    correlation: str | Unset = UNSET,
    id_prefix: str | Unset = UNSET,
    started_after: datetime.datetime | Unset = UNSET,
    started_before: datetime.datetime | Unset = UNSET,
    attr: list[str] | None | Unset = UNSET,
    limit: int | Unset = 50,
    cursor: str | Unset = UNSET,
) -> Problem | RunPage | None:
    """List runs, newest first

     Cursor-paginated. Filters apply to each page read, so a filtered page may hold fewer runs than limit
    and still have a next_cursor.

    Needs a key with the `read` scope.

    Args:
        workflow (str | Unset): Only runs of this workflow.
        status (ListRunsStatus | Unset): Only runs in this status.
        correlation (str | Unset): Only runs started with this correlation.
        id_prefix (str | Unset): Only runs whose id starts with this.
        started_after (datetime.datetime | Unset): Only runs started at or after this time (RFC
            3339).
        started_before (datetime.datetime | Unset): Only runs started before this time (RFC 3339).
        attr (list[str] | None | Unset): Only runs whose search attribute satisfies this
            condition: name:value (equal), name>value, name>=value, name<value or name<=value. Repeat
            for several (all must hold). A value is typed as attributes are: true/false a boolean, a
            number a number, an RFC 3339 time a time, anything else (or "quoted") a string. The
            listing reads the attribute index of the first condition's name: its runs come by value,
            then newest first (an equality: newest first).
        limit (int | Unset): Runs read per page. Default: 50.
        cursor (str | Unset): next_cursor of the previous page (opaque, base64url).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | RunPage
    """

    return sync_detailed(
        client=client,
        workflow=workflow,
        status=status,
        correlation=correlation,
        id_prefix=id_prefix,
        started_after=started_after,
        started_before=started_before,
        attr=attr,
        limit=limit,
        cursor=cursor,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    workflow: str | Unset = UNSET,
    status: ListRunsStatus | Unset = UNSET,
    correlation: str | Unset = UNSET,
    id_prefix: str | Unset = UNSET,
    started_after: datetime.datetime | Unset = UNSET,
    started_before: datetime.datetime | Unset = UNSET,
    attr: list[str] | None | Unset = UNSET,
    limit: int | Unset = 50,
    cursor: str | Unset = UNSET,
) -> Response[Problem | RunPage]:
    """List runs, newest first

     Cursor-paginated. Filters apply to each page read, so a filtered page may hold fewer runs than limit
    and still have a next_cursor.

    Needs a key with the `read` scope.

    Args:
        workflow (str | Unset): Only runs of this workflow.
        status (ListRunsStatus | Unset): Only runs in this status.
        correlation (str | Unset): Only runs started with this correlation.
        id_prefix (str | Unset): Only runs whose id starts with this.
        started_after (datetime.datetime | Unset): Only runs started at or after this time (RFC
            3339).
        started_before (datetime.datetime | Unset): Only runs started before this time (RFC 3339).
        attr (list[str] | None | Unset): Only runs whose search attribute satisfies this
            condition: name:value (equal), name>value, name>=value, name<value or name<=value. Repeat
            for several (all must hold). A value is typed as attributes are: true/false a boolean, a
            number a number, an RFC 3339 time a time, anything else (or "quoted") a string. The
            listing reads the attribute index of the first condition's name: its runs come by value,
            then newest first (an equality: newest first).
        limit (int | Unset): Runs read per page. Default: 50.
        cursor (str | Unset): next_cursor of the previous page (opaque, base64url).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | RunPage]
    """

    kwargs = _get_kwargs(
        workflow=workflow,
        status=status,
        correlation=correlation,
        id_prefix=id_prefix,
        started_after=started_after,
        started_before=started_before,
        attr=attr,
        limit=limit,
        cursor=cursor,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    workflow: str | Unset = UNSET,
    status: ListRunsStatus | Unset = UNSET,
    correlation: str | Unset = UNSET,
    id_prefix: str | Unset = UNSET,
    started_after: datetime.datetime | Unset = UNSET,
    started_before: datetime.datetime | Unset = UNSET,
    attr: list[str] | None | Unset = UNSET,
    limit: int | Unset = 50,
    cursor: str | Unset = UNSET,
) -> Problem | RunPage | None:
    """List runs, newest first

     Cursor-paginated. Filters apply to each page read, so a filtered page may hold fewer runs than limit
    and still have a next_cursor.

    Needs a key with the `read` scope.

    Args:
        workflow (str | Unset): Only runs of this workflow.
        status (ListRunsStatus | Unset): Only runs in this status.
        correlation (str | Unset): Only runs started with this correlation.
        id_prefix (str | Unset): Only runs whose id starts with this.
        started_after (datetime.datetime | Unset): Only runs started at or after this time (RFC
            3339).
        started_before (datetime.datetime | Unset): Only runs started before this time (RFC 3339).
        attr (list[str] | None | Unset): Only runs whose search attribute satisfies this
            condition: name:value (equal), name>value, name>=value, name<value or name<=value. Repeat
            for several (all must hold). A value is typed as attributes are: true/false a boolean, a
            number a number, an RFC 3339 time a time, anything else (or "quoted") a string. The
            listing reads the attribute index of the first condition's name: its runs come by value,
            then newest first (an equality: newest first).
        limit (int | Unset): Runs read per page. Default: 50.
        cursor (str | Unset): next_cursor of the previous page (opaque, base64url).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | RunPage
    """

    return (
        await asyncio_detailed(
            client=client,
            workflow=workflow,
            status=status,
            correlation=correlation,
            id_prefix=id_prefix,
            started_after=started_after,
            started_before=started_before,
            attr=attr,
            limit=limit,
            cursor=cursor,
        )
    ).parsed
