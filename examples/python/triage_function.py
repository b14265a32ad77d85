"""The triage workflow of triage.py written as a durable function: the same
steps as ordinary code, each checkpointed, so a crash or a deploy resumes the
ticket where it was (docs/FUNCTIONS.md, docs/SDK-PY.md). It is the Go
example's "triage-fn" (examples/triage), definition for definition, so Go and
Python workers can serve it side by side. It shares triage.py's
categorisation and its way of running (run_example). The SDK's tests run it.

Run `make run` (terminal 1), then, in a virtual environment with the SDK
installed (pip install ./sdk/python):

    python examples/python/triage_function.py          # serve, start one ticket, print the reply, stop
    python examples/python/triage_function.py --serve  # serve until SIGTERM or Ctrl-C (drains first)

$CAIRN_SERVER (default http://127.0.0.1:8080) and $CAIRN_KEY name the server.
"""

from __future__ import annotations

from triage import categorize, run_example

import cairn


def classify(subject: str, body: str) -> dict[str, str]:
    return categorize(f"{subject}\n{body}")


def lookup_customer(email: str) -> dict[str, str]:
    return {"email": email, "tier": "gold" if email.endswith("@bigcorp.com") else "standard"}


def draft_reply(customer: str, subject: str, queue: str, sla_hours: int) -> dict[str, str]:
    text = (
        f'Hi {customer}, thanks for reaching out about "{subject}". '
        f"Your ticket is with our {queue} team; expect an answer within {sla_hours} hours."
    )
    return {"queue": queue, "text": text}


async def triage(fc: cairn.Durable, ticket: dict[str, str]) -> dict[str, str]:
    # Each step runs once: a replay (after a crash, a deploy, a suspension)
    # returns its recorded result.
    c = await fc.step("classify", lambda: classify(ticket["subject"], ticket["body"]))
    customer = await fc.step("lookup_customer", lambda: lookup_customer(ticket["customer"]))
    fc.log.info("classified as %s (%s)", c["category"], c["priority"])
    # Plain code between steps runs again on replay: it only computes from
    # the input and step results.
    queue, sla_hours = c["category"], 48
    if c["priority"] == "high" or customer["tier"] == "gold":
        queue, sla_hours = f"{queue}-priority", 4
    reply: dict[str, str] = await fc.step(
        "draft_reply",
        lambda: draft_reply(ticket["customer"], ticket["subject"], queue, sla_hours),
        retry=cairn.RetryPolicy(max_attempts=5),
    )
    return reply


triage_fn = cairn.workflow(
    "triage-fn",
    "1",
    description="Support-ticket triage as a durable function: the same steps as triage, written as code.",
).function("main", triage, retry=cairn.RetryPolicy(max_attempts=1))


if __name__ == "__main__":
    run_example(triage_fn, "triage-fn-py", "example-ticket-fn-1")
