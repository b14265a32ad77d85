from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.cache_invalidation import CacheInvalidation
from ...models.problem import Problem
from ...types import UNSET, Response, Unset


def _get_kwargs(
    workflow: str,
    step: str,
    *,
    key: str | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["key"] = key

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "delete",
        "url": "/v1/api/cache/{workflow}/{step}".format(
            workflow=quote(str(workflow), safe=""),
            step=quote(str(step), safe=""),
        ),
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> CacheInvalidation | Problem | None:
    if response.status_code == 200:
        response_200 = CacheInvalidation.from_dict(response.json())

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
) -> Response[CacheInvalidation | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    workflow: str,
    step: str,
    *,
    client: AuthenticatedClient,
    key: str | Unset = UNSET,
) -> Response[CacheInvalidation | Problem]:
    """Invalidate a step's result cache

     Deletes the result cache entries of a workflow's step (every version's: they share them): one key's,
    or all of them. The next attempt of the step with a deleted key runs on a worker and writes the
    entry again. One DELETE on the bucket for a key; for a step, a LIST a page of 1,000 entries and a
    DELETE each. Deleting what is not there is not an error.

    Needs a key with the `execute` scope.

    Args:
        workflow (str): Workflow name.
        step (str): Step id.
        key (str | Unset): One key's entry only: the key's rendered value, as JSON (a string is
            quoted: "https://example.com"). Absent: every entry of the step.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[CacheInvalidation | Problem]
    """

    kwargs = _get_kwargs(
        workflow=workflow,
        step=step,
        key=key,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    workflow: str,
    step: str,
    *,
    client: AuthenticatedClient,
    key: str | Unset = UNSET,
) -> CacheInvalidation | Problem | None:
    """Invalidate a step's result cache

     Deletes the result cache entries of a workflow's step (every version's: they share them): one key's,
    or all of them. The next attempt of the step with a deleted key runs on a worker and writes the
    entry again. One DELETE on the bucket for a key; for a step, a LIST a page of 1,000 entries and a
    DELETE each. Deleting what is not there is not an error.

    Needs a key with the `execute` scope.

    Args:
        workflow (str): Workflow name.
        step (str): Step id.
        key (str | Unset): One key's entry only: the key's rendered value, as JSON (a string is
            quoted: "https://example.com"). Absent: every entry of the step.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        CacheInvalidation | Problem
    """

    return sync_detailed(
        workflow=workflow,
        step=step,
        client=client,
        key=key,
    ).parsed


async def asyncio_detailed(
    workflow: str,
    step: str,
    *,
    client: AuthenticatedClient,
    key: str | Unset = UNSET,
) -> Response[CacheInvalidation | Problem]:
    """Invalidate a step's result cache

     Deletes the result cache entries of a workflow's step (every version's: they share them): one key's,
    or all of them. The next attempt of the step with a deleted key runs on a worker and writes the
    entry again. One DELETE on the bucket for a key; for a step, a LIST a page of 1,000 entries and a
    DELETE each. Deleting what is not there is not an error.

    Needs a key with the `execute` scope.

    Args:
        workflow (str): Workflow name.
        step (str): Step id.
        key (str | Unset): One key's entry only: the key's rendered value, as JSON (a string is
            quoted: "https://example.com"). Absent: every entry of the step.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[CacheInvalidation | Problem]
    """

    kwargs = _get_kwargs(
        workflow=workflow,
        step=step,
        key=key,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    workflow: str,
    step: str,
    *,
    client: AuthenticatedClient,
    key: str | Unset = UNSET,
) -> CacheInvalidation | Problem | None:
    """Invalidate a step's result cache

     Deletes the result cache entries of a workflow's step (every version's: they share them): one key's,
    or all of them. The next attempt of the step with a deleted key runs on a worker and writes the
    entry again. One DELETE on the bucket for a key; for a step, a LIST a page of 1,000 entries and a
    DELETE each. Deleting what is not there is not an error.

    Needs a key with the `execute` scope.

    Args:
        workflow (str): Workflow name.
        step (str): Step id.
        key (str | Unset): One key's entry only: the key's rendered value, as JSON (a string is
            quoted: "https://example.com"). Absent: every entry of the step.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        CacheInvalidation | Problem
    """

    return (
        await asyncio_detailed(
            workflow=workflow,
            step=step,
            client=client,
            key=key,
        )
    ).parsed
