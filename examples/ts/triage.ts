// The triage workflow of examples/triage, in TypeScript: the same workflow
// (name, version and definition), so Go and TypeScript workers can serve it
// side by side. main.ts serves it; the SDK's tests run it too.
import { defineWorkflow, type StepContext } from "@cairn-dev/cairn";

interface Classification {
  category: string;
  priority: string;
}

export const triage = defineWorkflow({ name: "triage", version: "1", description: "Support-ticket triage: classify, look up the customer, route, draft a reply." })
  .task(
    "classify",
    (ctx: StepContext, input: { text: string }): Classification => {
      const text = input.text.toLowerCase();
      const c: Classification = { category: "other", priority: "normal" };
      if (/charge|refund|invoice/.test(text)) c.category = "billing";
      else if (/error|crash|bug/.test(text)) c.category = "bug";
      else if (/password|login/.test(text)) c.category = "account";
      if (/urgent|down/.test(text)) c.priority = "high";
      ctx.setStatePatch({ category: c.category, priority: c.priority });
      ctx.log.info("classified", { ...c });
      return c;
    },
    { input: { text: "${input.subject + '\\n' + input.body}" } },
  )
  .task("lookup_customer", (_ctx, email: string) => ({ email, tier: email.endsWith("@bigcorp.com") ? "gold" : "standard" }), { input: "${input.customer}" })
  .task(
    "route",
    (ctx, input: { category: string; urgent: boolean; tier: string }) => {
      const r = { queue: input.category, sla_hours: 48 };
      if (input.urgent || input.tier === "gold") {
        r.queue += "-priority";
        r.sla_hours = 4;
      }
      ctx.setState("queue", r.queue);
      return r;
    },
    {
      after: ["classify", "lookup_customer"],
      input: { category: "${steps.classify.output.category}", urgent: "${steps.classify.output.priority == 'high'}", tier: "${steps.lookup_customer.output.tier}" },
    },
  )
  .task(
    "draft_reply",
    (ctx, input: { greeting: string; queue: string; sla_hours: number; subject: string }) => {
      const prompt = `Draft a reply about "${input.subject}" for queue ${input.queue}`;
      const text = `${input.greeting} thanks for reaching out about "${input.subject}". Your ticket is with our ${input.queue} team; expect an answer within ${input.sla_hours} hours.`;
      ctx.setUsage({ model: "draft-model", input_tokens: prompt.split(/\s+/).length, output_tokens: text.split(/\s+/).length });
      return { queue: input.queue, text };
    },
    {
      after: ["route"],
      input: { greeting: "Hi ${input.customer},", queue: "${steps.route.output.queue}", sla_hours: "${steps.route.output.sla_hours}", subject: "${input.subject}" },
      retry: { maxAttempts: 5 },
    },
  );
