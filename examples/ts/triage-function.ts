// The triage workflow of triage.ts written as a durable function: the
// same steps as ordinary code, each checkpointed, so a crash or a deploy
// resumes the ticket where it was (docs/FUNCTIONS.md). main.ts serves it
// beside the DAG; start it with `cairn runs start triage-function`.
import { defineFunction } from "@cairn-dev/cairn";

interface Ticket {
  subject: string;
  body: string;
  customer: string;
}

interface Classification {
  category: string;
  priority: string;
}

export const triageFunction = defineFunction(
  { name: "triage-function", version: "1", description: "Support-ticket triage as a durable function: classify, look up the customer, route, draft a reply." },
  async (ctx, ticket: Ticket) => {
    // Independent steps run side by side; their ids are their names, so
    // their order does not matter on replay.
    const [c, customer] = await Promise.all([
      ctx.step("classify", (): Classification => {
        const text = `${ticket.subject}\n${ticket.body}`.toLowerCase();
        const c: Classification = { category: "other", priority: "normal" };
        if (/charge|refund|invoice/.test(text)) c.category = "billing";
        else if (/error|crash|bug/.test(text)) c.category = "bug";
        else if (/password|login/.test(text)) c.category = "account";
        if (/urgent|down/.test(text)) c.priority = "high";
        return c;
      }),
      ctx.step("lookup_customer", () => ({ email: ticket.customer, tier: ticket.customer.endsWith("@bigcorp.com") ? "gold" : "standard" })),
    ]);
    ctx.log.info("classified", { ...c });
    // Plain code between steps: it runs again on replay, so it only
    // computes from inputs and step results.
    const route = { queue: c.category, sla_hours: 48 };
    if (c.priority === "high" || customer.tier === "gold") {
      route.queue += "-priority";
      route.sla_hours = 4;
    }
    const text = await ctx.step(
      "draft_reply",
      () =>
        `Hi ${ticket.customer}, thanks for reaching out about "${ticket.subject}". Your ticket is with our ${route.queue} team; expect an answer within ${route.sla_hours} hours.`,
      { retry: { maxAttempts: 5 } },
    );
    return { queue: route.queue, text };
  },
);
