// How long the bot toll takes to pay in headless Chromium: opens each page of --dir
// (`toll-bBB-iIII.html`, the keep-waiting page with a toll of BB bits and its own
// challenge, from `cargo run --example toll_pages`), waits for the page's script to
// find its nonce and reads `window.wrToll` (ms from start to solution, hashes tried).
// Each difficulty runs at each CPU throttling rate (CDP Emulation.setCPUThrottlingRate;
// 1 = this machine, 4 = "phone", 6 = "low-end phone") on the same challenges, so the
// rates are compared on the same work. Prints a markdown table; exits 1 on a failure.
//
//   node toll_speed.mjs --dir /tmp/toll-pages [--rates 1,4,6] [--budget-secs 540]
//     [--cell-secs 75] [--drop-secs 30] [--drop-secs-throttled N] [--min-samples 3]
//     [--timeout-secs 120] [--batch N] [--out FILE] [--command TEXT]
//
// Bounded: a cell (one difficulty at one rate) stops taking samples after --cell-secs
// (once it has --min-samples, default 3), a cell whose mean solve is predicted (from
// the rate's previous difficulty) to take longer than --drop-secs (default 30; at a
// throttled rate --drop-secs-throttled, by default the same) is dropped, a solve
// still going after --timeout-secs is cut off and counted as that long, and no solve
// starts once --budget-secs have passed; the table says which.
// --batch N times a copy of the pages whose script hashes N nonces a round instead of
// its own (to compare batch sizes). --out FILE gets a markdown section, rewritten
// after every cell (partial results survive a stop).
// CHROMIUM overrides the browser (default /usr/bin/chromium).

import { createHash } from "node:crypto";
import { cpus, loadavg, tmpdir } from "node:os";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { chromium } from "playwright-core";
import { fail, timeoutMs, withChromium } from "./common.mjs";

const { values: args } = parseArgs({
  options: {
    dir: { type: "string" },
    rates: { type: "string", default: "1,4,6" },
    "budget-secs": { type: "string", default: "540" },
    "cell-secs": { type: "string", default: "75" },
    "timeout-secs": { type: "string", default: "120" },
    "min-samples": { type: "string", default: "3" },
    "drop-secs": { type: "string", default: "30" },
    "drop-secs-throttled": { type: "string" },
    batch: { type: "string" },
    out: { type: "string" },
    command: { type: "string" },
  },
});
if (!args.dir) {
  fail(
    "usage: --dir DIR [--rates 1,4,6] [--budget-secs N] [--cell-secs N] [--drop-secs N] " +
      "[--drop-secs-throttled N] [--min-samples N] [--timeout-secs N] [--batch N] [--out FILE] " +
      "[--command TEXT]",
  );
}
const timeout = timeoutMs(args);
const budgetMs = positive(args["budget-secs"], "--budget-secs") * 1000;
const cellMs = positive(args["cell-secs"], "--cell-secs") * 1000;
const minSamples = positive(args["min-samples"], "--min-samples");
const dropMs = positive(args["drop-secs"], "--drop-secs") * 1000;
const dropThrottledMs =
  args["drop-secs-throttled"] === undefined
    ? dropMs
    : positive(args["drop-secs-throttled"], "--drop-secs-throttled") * 1000;
const rates = args.rates.split(",").map((r) => positive(r, "--rates"));
const NAMES = { 1: "desktop", 4: "phone (4x)", 6: "low-end phone (6x)" };
const nameOf = (rate) => NAMES[rate] ?? `${rate}x`;

// The pages by difficulty: { bits: [path, ...] }, challenges in file order.
const pattern = /^toll-b(\d+)-i(\d+)\.html$/;
const files = readdirSync(args.dir).filter((f) => pattern.test(f)).sort();
if (files.length === 0) fail(`no toll-bBB-iIII.html pages in ${args.dir}`);
let pageDir = resolve(args.dir);
// Scratch space, removed at the end: a page without a toll, and changed copies.
const scratch = mkdtempSync(join(tmpdir(), "toll-speed-"));
const blank = join(scratch, "blank.html");
writeFileSync(blank, "<!doctype html><title>calibration</title><p>calibration</p>");
if (args.batch !== undefined) {
  const batch = positive(args.batch, "--batch");
  const copyDir = join(scratch, "pages");
  mkdirSync(copyDir);
  for (const f of files) {
    const html = readFileSync(join(pageDir, f), "utf8");
    const patched = html.replace(/var BATCH = \d+;/, `var BATCH = ${batch};`);
    if (patched === html && !html.includes(`var BATCH = ${batch};`)) {
      fail(`${f}: no "var BATCH = N;" in its script to change`);
    }
    writeFileSync(join(copyDir, f), patched);
  }
  pageDir = copyDir;
}
const byBits = new Map();
for (const f of files) {
  const bits = Number(f.match(pattern)[1]);
  if (!byBits.has(bits)) byBits.set(bits, []);
  byBits.get(bits).push(join(pageDir, f));
}
const difficulties = [...byBits.keys()].sort((a, b) => a - b);
// The script hashes whole batches: a solve at nonce k has computed ceil((k+1)/BATCH)
// batches, which is what hashes/s counts (wrToll.tried is k+1).
const batchMatch = readFileSync(byBits.get(difficulties[0])[0], "utf8").match(/var BATCH = (\d+);/);
if (!batchMatch) fail("the pages' script has no \"var BATCH = N;\"");
const BATCH = Number(batchMatch[1]);
const computed = (s) => (s.cut ? s.tried : Math.ceil(s.tried / BATCH) * BATCH);
const counted = (samples) => samples.filter((s) => computed(s) !== null);

const started = Date.now();
const load = loadavg().map((l) => l.toFixed(2)).join(" ");
const loads = [loadavg()[0]]; // the 1-minute load average at the start and after each cell
const results = []; // { bits, rate, samples: [{ ms, tried }], dropped, note }
const calibration = new Map(); // rate -> ms of a fixed JS loop on the page's main thread
let browserVersion = "?";
// One tab at a time, reused from page to page, which halves what a visit costs. CPU
// throttling slows a renderer process's main thread, and file: pages of one tab stay
// in one process: the tab is throttled once on a blank file: page and calibrated
// there, and closed before the next rate (tabs of one site may share a process). A
// tab whose solve was cut off is replaced.
let tab = null; // { page, errors, rate }

process.on("exit", () => rmSync(scratch, { recursive: true, force: true }));
await withChromium(chromium, async (browser) => {
  browserVersion = browser.version();
  const context = await browser.newContext({ viewport: { width: 1024, height: 640 } });
  // Rate by rate, easiest difficulty first: when time runs short, what is left out
  // is the slowest rate's hardest difficulties.
  for (const rate of rates) {
    await openTab(context, rate);
    calibration.set(rate, await calibrate(tab.page));
    for (const bits of difficulties) {
      const cell = { bits, rate, samples: [], dropped: false, note: "" };
      results.push(cell);
      const rate_ = hashRate(rate);
      const predicted = rate_ ? (2 ** bits / rate_) * 1000 : 0;
      if (Date.now() - started > budgetMs) {
        cell.dropped = true;
        cell.note = "not run: the time budget was spent";
      } else if (predicted > (rate === 1 ? dropMs : dropThrottledMs)) {
        cell.dropped = true;
        cell.note = `dropped: ~${(predicted / 1000).toFixed(0)} s a solve predicted`;
      } else {
        const cellStart = Date.now();
        for (const path of byBits.get(bits)) {
          if (cell.samples.length >= minSamples && Date.now() - cellStart > cellMs) break;
          if (Date.now() - started > budgetMs) {
            cell.note = "cut short: the time budget was spent";
            break;
          }
          cell.samples.push(await solve(context, rate, pathToFileURL(path).href));
        }
        const cut = cell.samples.filter((x) => x.cut).length;
        if (cut > 0) {
          const said = `${cut} solves cut off at ${timeout / 1000} s and counted as that`;
          cell.note = cell.note ? `${cell.note}; ${said}` : said;
        }
      }
      loads.push(loadavg()[0]);
      report(cell);
      writeOut();
    }
    await closeTab();
  }
  await context.close();
});
console.log("");
console.log(table());
writeOut();

/** Opens the page at `rate`, waits for its toll and returns { ms, tried, nonce }. */
async function solve(context, rate, url) {
  if (!tab) await openTab(context, rate);
  const { page, errors } = tab;
  errors.length = 0;
  let keep = false;
  try {
    // Not "load": the script's chain of digests holds the parser's end (and so
    // DOMContentLoaded and load) back until it is done; `ms` is the page's own clock.
    await page.goto(url, { waitUntil: "commit", timeout: 30_000 });
    try {
      await page.waitForFunction(() => window.wrToll && (window.wrToll.done || window.wrToll.failed), null, {
        timeout,
        polling: 250,
      });
    } catch {
      // Cut off: counted as --timeout-secs, so the cell's times are a lower bound (the
      // page may not answer while it hashes: its hashes are then left out of hashes/s).
      const toll = await Promise.race([
        page.evaluate(() => ({ ...window.wrToll })),
        new Promise((r) => setTimeout(() => r({}), 5000)),
      ]);
      return { ms: timeout, tried: typeof toll.tried === "number" ? toll.tried : null, cut: true };
    }
    const toll = await page.evaluate(() => ({ ...window.wrToll }));
    if (toll.failed || errors.length > 0) {
      throw new Error(`${url} at ${rate}x: the toll failed ${errors.join("; ")}`);
    }
    // The nonce must pay (file: pages keep no cookies, so the cookie is not read).
    const [challenge, bits] = await page.evaluate(() => {
      const box = document.getElementById("toll");
      return [box.dataset.challenge, Number(box.dataset.bits)];
    });
    const digest = createHash("sha256").update(`waiting-room-toll:${challenge}:${toll.nonce}`).digest();
    if (zeroBits(digest) < bits) throw new Error(`${url}: nonce ${toll.nonce} does not pay ${bits} bits`);
    keep = true;
    return { ms: toll.ms, tried: toll.tried, nonce: toll.nonce };
  } finally {
    if (!keep) await closeTab();
  }
}

/** Opens `tab`: a blank file: page whose main thread runs at 1/`rate` of its speed. */
async function openTab(context, rate) {
  const page = await context.newPage();
  page.setDefaultTimeout(timeout);
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(pathToFileURL(blank).href, { waitUntil: "load", timeout: 30_000 });
  const cdp = await context.newCDPSession(page);
  await cdp.send("Emulation.setCPUThrottlingRate", { rate });
  tab = { page, errors, rate };
}

async function closeTab() {
  if (!tab) return;
  const { page } = tab;
  tab = null;
  await page.close({ runBeforeUnload: false });
}

/** Milliseconds of a fixed JS loop on the main thread of `page` (median of 3). */
async function calibrate(page) {
  const times = [];
  for (let i = 0; i < 3; i++) {
    times.push(
      await page.evaluate(() => {
        const t0 = performance.now();
        let x = 0;
        for (let k = 0; k < 1e7; k++) x = (x + k * k) % 1000003;
        window.__sink = x;
        return performance.now() - t0;
      }),
    );
  }
  return stats(times).median;
}

/** Hashes a second at `rate`, from the last difficulty measured at it; null before. */
function hashRate(rate) {
  const done = results.filter((c) => c.rate === rate && c.samples.length > 0);
  if (done.length === 0) return null;
  const hps = hashesPerSecond(done[done.length - 1]);
  return Number.isFinite(hps) && hps > 0 ? hps : null;
}

function report(cell) {
  if (cell.samples.length === 0) {
    console.log(`${cell.bits} bits, ${nameOf(cell.rate)}: ${cell.note}`);
    return;
  }
  const s = stats(cell.samples.map((x) => x.ms));
  const hps = hashesPerSecond(cell);
  console.log(
    `${cell.bits} bits, ${nameOf(cell.rate)}: n=${s.n} median ${s.median.toFixed(0)} ms, ` +
      `mean ${s.mean.toFixed(0)} ms, p90 ${s.p90.toFixed(0)} ms, ${fmtRate(hps)} hashes/s` +
      `, load ${loadavg()[0].toFixed(2)}, at ${((Date.now() - started) / 1000).toFixed(0)} s` +
      (cell.note ? ` (${cell.note})` : ""),
  );
}

function hashesPerSecond(cell) {
  const known = counted(cell.samples);
  return sum(known.map(computed)) / (sum(known.map((s) => s.ms)) / 1000);
}

/** The markdown table: one row a difficulty, time columns for every rate. */
function table() {
  const head = ["bits", "expected hashes 2^bits"];
  for (const rate of rates) {
    const name = nameOf(rate);
    head.push(`${name} n`, `${name} median ms`, `${name} mean ms`);
    if (rate === 1) head.push(`${name} p90 ms`);
  }
  for (const rate of rates) head.push(`${nameOf(rate)} hashes/s`);
  const rows = [head, head.map(() => "---:")];
  const notes = [];
  for (const bits of difficulties) {
    const row = [String(bits), (2 ** bits).toLocaleString("en-US")];
    const cells = rates.map((rate) => results.find((c) => c.bits === bits && c.rate === rate));
    if (cells.every((c) => c === undefined)) continue;
    for (const [i, rate] of rates.entries()) {
      const cell = cells[i];
      if (!cell || cell.samples.length === 0) {
        row.push("–", "–", "–");
        if (rate === 1) row.push("–");
        if (cell?.note) notes.push(`${bits} bits, ${nameOf(rate)}: ${cell.note}.`);
        continue;
      }
      const s = stats(cell.samples.map((x) => x.ms));
      row.push(String(s.n), fmtMs(s.median), fmtMs(s.mean));
      if (rate === 1) row.push(fmtMs(s.p90));
      if (cell.note) notes.push(`${bits} bits, ${nameOf(rate)}: ${cell.note}.`);
    }
    for (const cell of cells) {
      row.push(cell && cell.samples.length > 0 ? fmtRate(hashesPerSecond(cell)) : "–");
    }
    rows.push(row);
  }
  const text = rows.map((r) => `| ${r.join(" | ")} |`).join("\n");
  return notes.length > 0 ? `${text}\n\n${notes.map((n) => `- ${n}`).join("\n")}` : text;
}

function writeOut() {
  if (!args.out) return;
  const cpu = cpus();
  const calib = rates
    .map((r) => `${nameOf(r)} ${calibration.get(r)?.toFixed(0) ?? "?"} ms`)
    .join(", ");
  const finished = results.length === difficulties.length * rates.length;
  const lines = [
    "## Bot toll: solve time in headless Chromium",
    "",
    ...(finished ? [] : ["_Partial: the run is still going (or was stopped); rows so far._", ""]),
    "```sh",
    args.command ?? `node tests/browser/toll_speed.mjs ${process.argv.slice(2).join(" ")}`,
    "```",
    "",
    `Machine: ${cpu.length} × ${cpu[0]?.model ?? "?"}; load average (1, 5, 15 min) at the start ` +
      `${load}, 1-min load during the run ${Math.min(...loads).toFixed(2)} to ` +
      `${Math.max(...loads).toFixed(2)}; Chromium ${browserVersion} headless (new headless), ` +
      `Node ${process.version}; the script's batch: ${BATCH} hashes` +
      (args.batch ? " (changed in a copy of the pages)." : "."),
    "",
    "Time is `window.wrToll.ms`, from the toll script's start to its solution (page load " +
      "not included); hashes/s is all hashes computed (whole batches) over all that time. Every rate solves " +
      "the same challenges. Main-thread check (a fixed 10⁷-step JS loop in the tab, " +
      `median of 3): ${calib}.`,
    "",
    table(),
    "",
  ];
  writeFileSync(args.out, lines.join("\n"));
}

function zeroBits(bytes) {
  let zeros = 0;
  for (const b of bytes) {
    if (b === 0) {
      zeros += 8;
      continue;
    }
    return zeros + Math.clz32(b) - 24;
  }
  return zeros;
}

function stats(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const n = sorted.length;
  const median = n % 2 ? sorted[(n - 1) / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  const p90 = sorted[Math.min(n - 1, Math.ceil(0.9 * n) - 1)];
  return { n, median, mean: sum(sorted) / n, p90 };
}

function sum(values) {
  return values.reduce((a, b) => a + b, 0);
}

function fmtMs(ms) {
  return ms >= 100 ? Math.round(ms).toLocaleString("en-US") : ms.toFixed(1);
}

function fmtRate(hps) {
  if (!Number.isFinite(hps)) return "?";
  return hps >= 1e6 ? `${(hps / 1e6).toFixed(2)} M` : `${(hps / 1e3).toFixed(0)} k`;
}

function positive(raw, name) {
  const n = Number(raw);
  if (!(n > 0)) fail(`${name} must be a positive number, not ${raw}`);
  return n;
}
