// The bot toll's two solvers in headless Chromium, on the built-in waiting page:
// its WebAssembly module (toll-solver/, inlined as base64) and the WebCrypto fallback.
// Opens each page of --dir named in its `expected.json` ({ "file": first paying nonce,
// from waiting_room::bots::toll::solve }) three times: as it is, without WebCrypto (so only
// the module can solve it) and without WebAssembly (so only WebCrypto can), and once
// more resuming from a sessionStorage count, and checks that every run finds exactly
// the room's nonce. Also checks that the inlined module imports nothing.
//
// --rate PAGE then measures hashes per second of each solver on PAGE (a page whose
// toll is not found in the time: 30 bits or so): --rate-secs of counting per run, the
// two solvers in turn, --rounds rounds, at each CPU throttling rate of --rates
// (CDP Emulation.setCPUThrottlingRate; 4 is Lighthouse's "phone"). Prints a markdown table.
//
//   node toll_solver.mjs --dir DIR [--rate PAGE] [--rates 1,4] [--rate-secs 3]
//     [--rounds 1] [--timeout-secs 60]
//
// Exits 0 on success, 1 with a message on failure. CHROMIUM overrides the browser.

import { readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { chromium } from "playwright-core";
import { fail, timeoutMs, withChromium } from "./common.mjs";

const { values: args } = parseArgs({
  options: {
    dir: { type: "string" },
    rate: { type: "string" },
    rates: { type: "string", default: "1" },
    "rate-secs": { type: "string", default: "3" },
    rounds: { type: "string", default: "1" },
    "timeout-secs": { type: "string", default: "60" },
  },
});
if (!args.dir) {
  fail("usage: --dir DIR [--rate PAGE] [--rates 1,4] [--rate-secs N] [--rounds N] [--timeout-secs N]");
}
const timeout = timeoutMs(args);
const expected = JSON.parse(readFileSync(join(args.dir, "expected.json"), "utf8"));
const files = Object.keys(expected).sort();
if (files.length === 0) fail(`no pages in ${args.dir}/expected.json`);
const rates = args.rates.split(",").map(Number);
const rateMs = Number(args["rate-secs"]) * 1000;
const rounds = Number(args.rounds);
if (rates.some((r) => !(r >= 1)) || !(rateMs > 0) || !(rounds >= 1)) fail("bad --rates, --rate-secs or --rounds");

// What each solver needs the browser to lack, set before the page's script runs.
const WITHOUT = {
  page: null,
  wasm: () => Object.defineProperty(Crypto.prototype, "subtle", { get: () => undefined }),
  webcrypto: () => delete window.WebAssembly,
};

checkModule(readFileSync(join(args.dir, files[0]), "utf8"));
await withChromium(chromium, async (browser) => {
  const context = await browser.newContext();
  for (const file of files) {
    const url = pathToFileURL(resolve(join(args.dir, file))).href;
    const want = expected[file];
    for (const solver of Object.keys(WITHOUT)) {
      const toll = await solve(context, url, solver, null);
      if (toll.nonce !== want) throw new Error(`${file} (${solver}): nonce ${toll.nonce}, the room's is ${want}`);
      console.log(`${file} (${solver}): nonce ${toll.nonce} in ${toll.ms.toFixed(0)} ms`);
    }
    // A reload's resume: the count saved by the page is where it searches from.
    const toll = await solve(context, url, "page", want);
    if (toll.nonce !== want || toll.tried !== want + 1) {
      throw new Error(`${file} resumed at ${want}: nonce ${toll.nonce}, tried ${toll.tried}`);
    }
  }
  console.log(`${files.length} pages solved by each solver`);
  if (args.rate) await measure(context, pathToFileURL(resolve(args.rate)).href);
  await context.close();
});

/** The module in the page's data block: it must compile and import nothing. */
function checkModule(html) {
  const data = html.match(/<script type="application\/wasm-base64" id="toll-solver">([^<]*)<\/script>/);
  if (!data) fail("the page has no toll-solver data block");
  const module = new WebAssembly.Module(Buffer.from(data[1], "base64"));
  const imports = WebAssembly.Module.imports(module);
  if (imports.length > 0) fail(`the module imports ${JSON.stringify(imports)}`);
  const exports = WebAssembly.Module.exports(module).map((e) => e.name).sort().join(",");
  if (exports !== "memory,prefix,search") fail(`the module exports ${exports}`);
}

/** A page with `solver`'s lacks, throttled to 1/`rate`, and (optionally) a saved count. */
async function open(context, url, solver, rate, resume) {
  const page = await context.newPage();
  page.setDefaultTimeout(timeout);
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  if (WITHOUT[solver]) await page.addInitScript(WITHOUT[solver]);
  if (resume !== null) {
    const challenge = readFileSync(new URL(url), "utf8").match(/data-challenge="([0-9a-f]{64})"/)[1];
    await page.addInitScript(([key, value]) => sessionStorage.setItem(key, value), [
      `waiting-toll:${challenge}`,
      String(resume),
    ]);
  }
  const cdp = await context.newCDPSession(page);
  await cdp.send("Emulation.setCPUThrottlingRate", { rate });
  await page.goto(url, { waitUntil: "load", timeout: 30_000 });
  return { page, errors };
}

/** Solves the toll of `url` with `solver` and returns `window.wrToll`. */
async function solve(context, url, solver, resume) {
  const { page, errors } = await open(context, url, solver, 1, resume);
  try {
    await page.waitForFunction(() => window.wrToll.done || window.wrToll.failed, null, { polling: 50 });
    const toll = await page.evaluate(() => ({ ...window.wrToll }));
    if (toll.failed || errors.length > 0) throw new Error(`${url} (${solver}) failed ${errors.join("; ")}`);
    return toll;
  } finally {
    await page.close();
  }
}

/** Hashes a second of each solver at each rate, in turns. */
async function measure(context, url) {
  const seen = {}; // "solver rate" -> [hashes/s]
  const loads = [loadavg()[0]];
  for (const rate of rates) {
    for (let round = 0; round < rounds; round++) {
      for (const solver of ["wasm", "webcrypto"]) {
        const { page, errors } = await open(context, url, solver, rate, null);
        try {
          // From its first progress: the module compiled, the first slices done.
          await page.waitForFunction(() => window.wrToll.tried > 0, null, { polling: 50 });
          const at = () => page.evaluate(() => [window.wrToll.tried, performance.now(), window.wrToll.done]);
          const [tried0, t0] = await at();
          await new Promise((r) => setTimeout(r, rateMs));
          const [tried1, t1, done] = await at();
          if (done || errors.length > 0) throw new Error(`${url} (${solver}): solved or failed while counting`);
          const hps = ((tried1 - tried0) / (t1 - t0)) * 1000;
          (seen[`${solver} ${rate}`] ??= []).push(hps);
          console.log(`${solver}, ${rate}x: ${fmt(hps)} hashes/s`);
        } finally {
          await page.close();
        }
        loads.push(loadavg()[0]);
      }
    }
  }
  const median = (v) => [...v].sort((a, b) => a - b)[Math.floor((v.length - 1) / 2)];
  const rows = ["| CPU | WebCrypto hashes/s | WebAssembly hashes/s | ratio |", "|---|---:|---:|---:|"];
  for (const rate of rates) {
    const crypto = median(seen[`webcrypto ${rate}`]);
    const wasm = median(seen[`wasm ${rate}`]);
    rows.push(`| ${rate === 1 ? "this machine" : `${rate}x throttled`} | ${fmt(crypto)} | ${fmt(wasm)} | ${(wasm / crypto).toFixed(0)}× |`);
  }
  console.log(`\n${rows.join("\n")}\n`);
  console.log(`medians of ${rounds} runs of ${rateMs / 1000} s; 1-min load ${Math.min(...loads).toFixed(1)} to ${Math.max(...loads).toFixed(1)}`);
}

function fmt(hps) {
  return hps >= 1e6 ? `${(hps / 1e6).toFixed(2)} M` : `${(hps / 1e3).toFixed(1)} k`;
}
