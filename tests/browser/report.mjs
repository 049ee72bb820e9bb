// `wrctl report`'s HTML file in a real browser, at a phone and a desktop width: checks
// that every figure is an SVG with role="img" and a <title> that names it, that the
// page fits the phone's width (only its tables scroll, each in a focusable region),
// axe-core's WCAG 2.1 A/AA rules, and that the page asks for nothing (it is one
// self-contained file); saves report-phone.png and report-desktop.png (the whole
// page). Exits 0 on success, 1 with a message.
//
//   node report.mjs --file /path/report.html --out artifacts [--figures N] [--expect TEXT]...
//
// --figures is how many SVGs the page must hold; every --expect text must be on it.
// CHROMIUM overrides the browser (default /usr/bin/chromium).

import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { chromium } from "playwright-core";
import { checkAxe } from "./axe.mjs";
import { fail, withChromium } from "./common.mjs";

const { values: args } = parseArgs({
  options: {
    file: { type: "string" },
    out: { type: "string", default: "artifacts" },
    figures: { type: "string", default: "2" },
    expect: { type: "string", multiple: true, default: [] },
  },
});
if (!args.file) fail("usage: --file REPORT.html [--out DIR] [--figures N] [--expect TEXT]...");
const url = pathToFileURL(resolve(args.file)).href;
const VIEWPORTS = [
  { name: "phone", width: 390, height: 844 },
  { name: "desktop", width: 1280, height: 800 },
];

await withChromium(chromium, async (browser) => {
  mkdirSync(args.out, { recursive: true });
  for (const viewport of VIEWPORTS) await visit(browser, viewport);
});
console.log("OK");

async function visit(browser, { name, width, height }) {
  const page = await browser.newPage({ viewport: { width, height } });
  const problems = [];
  page.on("console", (m) => m.type() === "error" && problems.push(`console error: ${m.text()}`));
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("request", (r) => r.url() !== url && problems.push(`a request: ${r.url()}`));
  const label = `the report, ${name} ${width}x${height}`;
  await page.goto(url, { waitUntil: "load", timeout: 30_000 });

  const figures = await page.evaluate(() =>
    [...document.querySelectorAll("svg")].map((svg) => {
      const id = svg.getAttribute("aria-labelledby");
      const title = svg.querySelector(":scope > title");
      return {
        role: svg.getAttribute("role"),
        title: title?.textContent ?? "",
        named: id !== null && title !== null && title.id === id,
        width: svg.getBoundingClientRect().width,
      };
    }),
  );
  if (figures.length !== Number(args.figures)) {
    throw new Error(`${label}: ${figures.length} figures, not ${args.figures}`);
  }
  for (const f of figures) {
    if (f.role !== "img" || !f.named || f.title.trim() === "") {
      throw new Error(`${label}: a figure without role="img" and a <title> naming it: ${JSON.stringify(f)}`);
    }
    if (f.width > width) throw new Error(`${label}: a figure ${f.width} px wide`);
  }
  const text = await page.innerText("body");
  for (const expected of args.expect) {
    if (!text.includes(expected)) throw new Error(`${label}: "${expected}" is not on the page`);
  }
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  if (overflow > 0) throw new Error(`${label}: the page is ${overflow} px wider than the window`);

  await checkAxe(page, label);
  await page.screenshot({ path: join(args.out, `report-${name}.png`), fullPage: true });
  if (problems.length > 0) throw new Error(`${label}:\n  ${problems.join("\n  ")}`);
  console.log(`${label}: ${figures.length} figures, each an img with its title`);
  await page.close();
}
