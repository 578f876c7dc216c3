// Test oracle for src/chat: renders a real chat template with @huggingface/jinja
// (the JavaScript port of the Jinja that Hugging Face transformers uses), so
// the C++ renderers are checked against an implementation that is not ours.
//
// Usage: node render.mjs [FILE]   (reads standard input without FILE)
// Input: one case {template, messages, bos_token, eos_token,
// add_generation_prompt} or {template, context} (the variables as given), or
// an array of cases. Output (JSON on stdout): for
// each case {"text": rendered} or {"error": message} when the template raises;
// an array for an array.
import { readFileSync } from "node:fs";
import { Template } from "@huggingface/jinja";

function render(c) {
  try {
    const context = c.context ?? {
      messages: c.messages,
      bos_token: c.bos_token ?? "",
      eos_token: c.eos_token ?? "",
      add_generation_prompt: c.add_generation_prompt ?? true,
    };
    const text = new Template(c.template).render(context);
    return { text };
  } catch (e) {
    return { error: e instanceof Error ? e.message : String(e) };
  }
}

const input = JSON.parse(readFileSync(process.argv[2] ?? 0, "utf8"));
process.stdout.write(JSON.stringify(Array.isArray(input) ? input.map(render) : render(input)));
