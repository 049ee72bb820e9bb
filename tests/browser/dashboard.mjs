// The controller's dashboard in a real browser, at a phone and a desktop width: waits
// until the page has drawn a snapshot of status.json, checks the texts it must show,
// the charts' text alternatives and axe-core's WCAG 2.1 A/AA rules, fails on any
// console or page error and on any request that leaves the page's origin, saves
// dashboard-phone.png and dashboard-desktop.png, then cuts status.json off and checks
// that the page says so and keeps its data. Exits 0 on success, 1 with a message.
//
//   node dashboard.mjs --url http://127.0.0.1:7070/ --out artifacts \
//     [--expect TEXT]... [--expect-chart TEXT]... [--absent TEXT]... [--timeout-secs 30]
//
// Every --expect text must be on the page, every --expect-chart text in the text
// alternative (aria-label) of one of its charts, and no --absent text may be shown.
// CHROMIUM overrides the browser (default /usr/bin/chromium).

import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { chromium } from "playwright-core";
import { checkAxe } from "./axe.mjs";
import { fail, timeoutMs, withChromium } from "./common.mjs";

const { values: args } = parseArgs({
  options: {
    url: { type: "string" },
    out: { type: "string", default: "artifacts" },
    expect: { type: "string", multiple: true, default: [] },
    "expect-chart": { type: "string", multiple: true, default: [] },
    absent: { type: "string", multiple: true, default: [] },
    "timeout-secs": { type: "string", default: "30" },
  },
});
if (!args.url) {
  fail(
    "usage: --url URL [--out DIR] [--expect TEXT]... [--expect-chart TEXT]... [--absent TEXT]... " +
      "[--timeout-secs N]",
  );
}
const timeout = timeoutMs(args);
const origin = new URL(args.url).origin;
const VIEWPORTS = [
  { name: "phone", width: 390, height: 844 },
  { name: "desktop", width: 1280, height: 800 },
];
/** How many charts every snapshot draws (the origin rule's two more are drawn only with it). */
const CHARTS = 5;

await withChromium(chromium, async (browser) => {
  mkdirSync(args.out, { recursive: true });
  for (const viewport of VIEWPORTS) await visit(browser, viewport, viewport.name === "desktop");
});
console.log("OK");

async function visit(browser, { name, width, height }, cutOff) {
  const page = await browser.newPage({ viewport: { width, height } });
  const problems = [];
  let expectFetchErrors = false;
  page.on("console", (m) => {
    if (m.type() !== "error") return;
    // A fetch the test itself cuts off is logged by Chromium as a failed load.
    if (expectFetchErrors && m.text().startsWith("Failed to load resource")) return;
    problems.push(`console error: ${m.text()}`);
  });
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("request", (r) => {
    const url = r.url();
    if (url.startsWith("data:")) return;
    if (new URL(url).origin !== origin) problems.push(`request off the page's origin: ${url}`);
  });
  const label = `the dashboard, ${name} ${width}x${height}`;

  const response = await page.goto(args.url, { waitUntil: "load", timeout: 30_000 });
  if (response?.status() !== 200) throw new Error(`${args.url} answered ${response?.status()}, not 200`);
  try {
    await page.waitForFunction(
      (n) => document.body.dataset.updated !== undefined && document.querySelectorAll("section:not([hidden]) svg[role=img][aria-label]").length >= n,
      CHARTS,
      { timeout },
    );
  } catch {
    const text = await page.innerText("body").catch(() => "(no page)");
    throw new Error(`${label} drew no snapshot within ${timeout / 1000} s (${problems.join("; ")}); it shows:\n${text}`);
  }
  const updated = await page.evaluate(() => document.body.dataset.updated);
  const charts = await page.$$eval("svg[role=img]", (svgs) => svgs.map((s) => s.getAttribute("aria-label")));
  const text = await page.innerText("body");
  const missing = args.expect.filter((t) => !text.includes(t));
  if (missing.length > 0) throw new Error(`${label} lacks ${JSON.stringify(missing)}; it shows:\n${text}`);
  const shown = args.absent.filter((t) => text.includes(t));
  if (shown.length > 0) throw new Error(`${label} shows ${JSON.stringify(shown)}; it shows:\n${text}`);
  const unsaid = args["expect-chart"].filter((t) => !charts.some((c) => c.includes(t)));
  if (unsaid.length > 0) {
    throw new Error(`no chart of ${label} says ${JSON.stringify(unsaid)}; they say:\n${charts.join("\n")}`);
  }
  const wide = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  if (wide > 0) throw new Error(`${label} is ${wide} px wider than the window`);
  console.log(`${label}: snapshot ${updated}`);
  for (const c of charts) console.log(`  chart: ${c}`);
  await checkAxe(page, label);
  const png = join(args.out, `dashboard-${name}.png`);
  await page.screenshot({ path: png, fullPage: true });
  console.log(`${label}: ${png}`);

  if (cutOff) {
    // The controller stops answering: the page must say so and keep the last data.
    expectFetchErrors = true;
    await page.route("**/status.json*", (route) => route.abort());
    await page.getByText("Connection lost").waitFor({ state: "visible", timeout: 10_000 });
    const still = await page.evaluate(() => document.body.dataset.updated);
    if (still !== updated) throw new Error(`${label} lost its data (snapshot ${updated} became ${still})`);
    const live = await page.$eval("#conn", (e) => e.closest("[aria-live]")?.getAttribute("aria-live"));
    if (live !== "polite") throw new Error(`the connection status is not in a polite live region (${live})`);
    await checkAxe(page, `${label}, connection lost`);
    await page.unroute("**/status.json*");
    await page.getByText("Connection restored").waitFor({ state: "visible", timeout: 10_000 });
    expectFetchErrors = false;
    console.log(`${label}: says when the connection is lost and restored, keeps its data`);
  }
  if (problems.length > 0) throw new Error(`${label}:\n  ${problems.join("\n  ")}`);
  await page.close();
}
