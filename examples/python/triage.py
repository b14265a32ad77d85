"""The triage workflow of examples/triage, in Python: the same workflow (name,
version and definition), so Go, TypeScript and Python workers can serve it
side by side. The SDK's tests run it too.

Run `make run` (terminal 1), then, in a virtual environment with the SDK
installed (pip install ./sdk/python):

    python examples/python/triage.py          # serve, start one ticket, print the reply, stop
    python examples/python/triage.py --serve  # serve until SIGTERM or Ctrl-C (drains first)

$CAIRN_SERVER (default http://127.0.0.1:8080) and $CAIRN_KEY name the server.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import threading
from typing import Any

import cairn


def categorize(text: str) -> dict[str, str]:
    """A ticket's category and priority, from its text."""
    text = text.lower()
    c = {"category": "other", "priority": "normal"}
    if re.search(r"charge|refund|invoice", text):
        c["category"] = "billing"
    elif re.search(r"error|crash|bug", text):
        c["category"] = "bug"
    elif re.search(r"password|login", text):
        c["category"] = "account"
    if re.search(r"urgent|down", text):
        c["priority"] = "high"
    return c


def classify(ctx: cairn.StepContext, input: dict[str, str]) -> dict[str, str]:
    c = categorize(input["text"])
    ctx.set_state_patch(c)
    ctx.log.info("classified as %s (%s)", c["category"], c["priority"])
    return c


def lookup_customer(ctx: cairn.StepContext, email: str) -> dict[str, str]:
    return {"email": email, "tier": "gold" if email.endswith("@bigcorp.com") else "standard"}


def route(ctx: cairn.StepContext, input: dict[str, Any]) -> dict[str, Any]:
    r = {"queue": input["category"], "sla_hours": 48}
    if input["urgent"] or input["tier"] == "gold":
        r["queue"] = f"{r['queue']}-priority"
        r["sla_hours"] = 4
    ctx.set_state("queue", r["queue"])
    return r


def draft_reply(ctx: cairn.StepContext, input: dict[str, Any]) -> dict[str, str]:
    prompt = f'Draft a reply about "{input["subject"]}" for queue {input["queue"]}'
    text = (
        f'{input["greeting"]} thanks for reaching out about "{input["subject"]}". '
        f"Your ticket is with our {input['queue']} team; expect an answer within {input['sla_hours']} hours."
    )
    ctx.set_usage(cairn.Usage(model="draft-model", input_tokens=len(prompt.split()), output_tokens=len(text.split())))
    return {"queue": input["queue"], "text": text}


triage = (
    cairn.workflow(
        "triage", "1", description="Support-ticket triage: classify, look up the customer, route, draft a reply."
    )
    .task("classify", classify, input={"text": "${input.subject + '\\n' + input.body}"})
    .task("lookup_customer", lookup_customer, input="${input.customer}")
    .task(
        "route",
        route,
        after=["classify", "lookup_customer"],
        input={
            "category": "${steps.classify.output.category}",
            "urgent": "${steps.classify.output.priority == 'high'}",
            "tier": "${steps.lookup_customer.output.tier}",
        },
    )
    .task(
        "draft_reply",
        draft_reply,
        after=["route"],
        input={
            "greeting": "Hi ${input.customer},",
            "queue": "${steps.route.output.queue}",
            "sla_hours": "${steps.route.output.sla_hours}",
            "subject": "${input.subject}",
        },
        retry=cairn.RetryPolicy(max_attempts=5),
    )
)


def run_example(wf: cairn.Workflow, label: str, idempotency_key: str) -> None:
    """Serves wf: with --serve until SIGTERM or Ctrl-C (draining first), else
    while it starts one ticket and prints the reply."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request otherwise
    client = cairn.Client()
    worker = cairn.Worker(client, concurrency=8, labels={"example": label}).register(wf)
    if "--serve" in sys.argv:
        # Drains on SIGTERM/SIGINT: running steps finish and report first; a
        # function suspends, to go on in another attempt.
        worker.serve()
        return
    t = threading.Thread(target=worker.serve, kwargs={"handle_signals": False})
    t.start()
    try:
        if not worker.wait_ready(30):
            raise SystemExit(f"the worker did not register with {client.server} within 30 s (is `make run` up?)")
        ticket = {"subject": "Charged twice", "body": "URGENT: I was charged twice", "customer": "ana@bigcorp.com"}
        started = client.start(wf.name, ticket, idempotency_key=idempotency_key)
        print(f"run {started.run.id} ({'existed' if started.existed else 'started'})")
        print(json.dumps(client.result(started.run.id), indent=2))
    finally:
        worker.stop()
        t.join(60)
        client.close()


if __name__ == "__main__":
    run_example(triage, "triage-py", "example-ticket-1")
