// One visitor in a real browser: opens a protected URL, checks the waiting page,
// takes a screenshot of it, checks it with axe-core (WCAG 2.1 A and AA) at a phone and
// a desktop width and takes a phone-width screenshot too, then lets the page refresh
// itself (the room's `Refresh` header; this script never navigates again) until the
// origin answers, and takes a screenshot of that. Exits 0 on success, 1 with a
// message on failure.
//
//   node waiting_room.mjs --url http://127.0.0.1:7676/events --out artifacts \
//     --expect "You are in the waiting room" [--expect TEXT ...] \
//     --origin-text "You reached the demo origin" [--timeout-secs 60] \
//     [--challenge-token XXXX.DUMMY.TOKEN.XXXX]
//
// With --challenge-token, the challenge providers' widget scripts never load from
// the network: a fake served in their place hands the page's callback that token
// (the providers' documented dummy token), as a solved widget would.
//
// Every --expect text must be on the first page; WAITING_ROOM_EXPECT (texts separated
// by newlines) adds more. CHROMIUM overrides the browser (default /usr/bin/chromium).

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
    "origin-text": { type: "string" },
    "timeout-secs": { type: "string", default: "60" },
    "challenge-token": { type: "string" },
  },
});
if (!args.url || !args["origin-text"]) {
  fail("usage: --url URL --origin-text TEXT [--out DIR] [--expect TEXT]... [--timeout-secs N]");
}
const expected = [
  ...args.expect,
  ...(process.env.WAITING_ROOM_EXPECT ?? "").split("\n").filter((t) => t.trim() !== ""),
];
const timeout = timeoutMs(args);
// The providers' widget scripts (src/bots/challenge.rs, `Provider::script_url`).
const WIDGET_SCRIPTS = [
  "https://challenges.cloudflare.com/turnstile/v0/api.js",
  "https://js.hcaptcha.com/1/api.js",
];

await withChromium(chromium, async (browser) => visit(browser));
console.log("OK");

async function visit(browser) {
  const page = await browser.newPage({ viewport: { width: 1024, height: 640 } });
  await fakeWidgets(page);
  // Every page the main frame shows, with the room's Refresh header, for the log.
  page.on("response", (r) => {
    if (r.request().isNavigationRequest() && r.frame() === page.mainFrame()) {
      const refresh = r.headers()["refresh"];
      console.log(`page: ${r.status()} ${r.url()}${refresh ? ` (Refresh: ${refresh})` : ""}`);
    }
  });
  mkdirSync(args.out, { recursive: true });

  const first = await page.goto(args.url, { waitUntil: "load", timeout: 30_000 });
  if (first?.status() !== 200) throw new Error(`${args.url} answered ${first?.status()}, not 200`);
  const text = await page.innerText("body");
  const missing = expected.filter((t) => !text.includes(t));
  if (missing.length > 0) {
    throw new Error(`the waiting page lacks ${JSON.stringify(missing)}; it shows:\n${text}`);
  }
  if (text.includes(args["origin-text"])) {
    throw new Error("the first page is already the origin: no waiting page was shown");
  }
  const waiting = join(args.out, "waiting-page.png");
  await page.screenshot({ path: waiting });
  console.log(`waiting page: ${waiting}`);
  await checkPhoneAndDesktop(browser, await first.text());

  // A locator outlives navigations: it finds the text on whichever page is shown.
  try {
    await page
      .getByText(args["origin-text"])
      .first()
      .waitFor({ state: "visible", timeout });
  } catch {
    const now = await page.innerText("body").catch(() => "(no page)");
    throw new Error(
      `the origin did not appear within ${timeout / 1000} s of automatic refreshes; ` +
        `the page shows:\n${now}`,
    );
  }
  await page.waitForLoadState("load");
  const origin = join(args.out, "origin.png");
  await page.screenshot({ path: origin });
  console.log(`origin: ${origin}`);
}

// The waiting page as served, in a page of its own: the copy has no `Refresh` header,
// so it stays put while axe runs at each width (the visitor's page refreshes on).
async function checkPhoneAndDesktop(browser, html) {
  const copy = await browser.newPage({ viewport: { width: 390, height: 844 } });
  await fakeWidgets(copy);
  const errors = [];
  copy.on("pageerror", (e) => errors.push(e.message));
  await copy.setContent(html, { waitUntil: "load" });
  await checkAxe(copy, "the waiting page, phone 390x844");
  const phone = join(args.out, "waiting-page-phone.png");
  await copy.screenshot({ path: phone, fullPage: true });
  console.log(`waiting page, phone: ${phone}`);
  await copy.setViewportSize({ width: 1280, height: 800 });
  await checkAxe(copy, "the waiting page, desktop 1280x800");
  if (errors.length > 0) throw new Error(`the waiting page's script failed: ${errors.join("; ")}`);
  await copy.close();
}


// With --challenge-token, serves a fake widget script instead of the provider's: it
// calls each widget's `data-callback` with the token once the page is parsed.
async function fakeWidgets(page) {
  const token = args["challenge-token"];
  if (!token) return;
  const body = `(function () {
  function solve() {
    document.querySelectorAll(".cf-turnstile, .h-captcha").forEach(function (widget) {
      var done = window[widget.getAttribute("data-callback")];
      if (typeof done === "function") done(${JSON.stringify(token)});
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", solve);
  else solve();
})();`;
  for (const url of WIDGET_SCRIPTS) {
    await page.route(url, (route) => {
      console.log(`fake widget served for ${url}`);
      return route.fulfill({ status: 200, contentType: "application/javascript", body });
    });
  }
}
