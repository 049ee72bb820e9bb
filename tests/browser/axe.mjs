// axe-core in a playwright page: injects the engine's own source (no network) and
// runs the WCAG 2.0 and 2.1 A and AA rules on the whole document.
//
//   import { checkAxe } from "./axe.mjs";
//   await checkAxe(page, "waiting page, 390x844");   // throws on any violation

import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

const require = createRequire(import.meta.url);
const AXE_SOURCE = readFileSync(join(dirname(require.resolve("axe-core")), "axe.min.js"), "utf8");
export const AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"];

/** The violations of the page as axe reports them (an empty array when there are none). */
export async function axeViolations(page) {
  if (!(await page.evaluate(() => typeof window.axe === "object"))) {
    await page.addScriptTag({ content: AXE_SOURCE });
  }
  const results = await page.evaluate(
    (tags) => window.axe.run(document, { runOnly: { type: "tag", values: tags }, resultTypes: ["violations"] }),
    AXE_TAGS,
  );
  return results.violations;
}

/** One readable line per violation and per element it names. */
export function describeViolations(violations) {
  return violations
    .map((v) => {
      const nodes = v.nodes.map((n) => {
        const why = (n.failureSummary ?? "").split("\n").slice(1).map((l) => l.trim()).filter((l) => l);
        return `    at ${n.target.join(" ")}: ${why.join("; ")}`;
      });
      return `  ${v.id} (${v.impact ?? "no impact"}): ${v.help}\n${nodes.join("\n")}`;
    })
    .join("\n");
}

/** Runs axe on `page`; throws with the list of violations if there are any. */
export async function checkAxe(page, label) {
  const violations = await axeViolations(page);
  if (violations.length > 0) {
    throw new Error(`axe: ${violations.length} violation(s) on ${label}:\n${describeViolations(violations)}`);
  }
  console.log(`axe: 0 violations on ${label} (${AXE_TAGS.join(", ")})`);
}
