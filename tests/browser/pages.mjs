// Every built-in page in every language, checked with axe-core (WCAG 2.1 A and AA) at
// a phone and a desktop width: opens each `<lang>-<page>.html` of --dir and checks its
// `lang` attribute too. Exits 0 on success, 1 with a message on failure.
//
//   node pages.mjs --dir /tmp/pages [--timeout-secs 120]

import { readdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { chromium } from "playwright-core";
import { checkAxe } from "./axe.mjs";
import { fail, timeoutMs, withChromium } from "./common.mjs";

const { values: args } = parseArgs({
  options: {
    dir: { type: "string" },
    "timeout-secs": { type: "string", default: "120" },
  },
});
if (!args.dir) fail("usage: --dir DIR [--timeout-secs N]");
const timeout = timeoutMs(args);
const files = readdirSync(args.dir).filter((f) => f.endsWith(".html")).sort();
if (files.length === 0) fail(`no pages in ${args.dir}`);

await withChromium(chromium, async (browser) => {
  const page = await browser.newPage();
  page.setDefaultTimeout(timeout);
  for (const file of files) {
    const lang = file.split("-")[0];
    await page.goto(pathToFileURL(resolve(join(args.dir, file))).href);
    const said = await page.evaluate(() => document.documentElement.lang);
    if (said !== lang) throw new Error(`${file}: lang="${said}", expected "${lang}"`);
    for (const [width, height] of [[390, 844], [1280, 800]]) {
      await page.setViewportSize({ width, height });
      await checkAxe(page, `${file}, ${width}x${height}`);
    }
  }
  console.log(`${files.length} pages checked`);
});
