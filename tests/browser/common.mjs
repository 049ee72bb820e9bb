// What the two browser scripts share: how they fail, read their timeout and launch
// Chromium.

/** Prints the message and exits 1. */
export function fail(message) {
  console.error(`FAILED: ${message}`);
  process.exit(1);
}

/** `--timeout-secs` in milliseconds; fails unless it is a positive number. */
export function timeoutMs(args) {
  const ms = Number(args["timeout-secs"]) * 1000;
  if (!(ms > 0)) fail(`--timeout-secs must be a positive number, not ${args["timeout-secs"]}`);
  return ms;
}

// The flags keep Chromium off the network but for the page under test; playwright
// gives every launch a fresh, empty profile (--user-data-dir) of its own.
// CHROMIUM overrides the browser (default /usr/bin/chromium).
/** Runs `visits` with a headless Chromium, closes it, and fails on an error. */
export async function withChromium(chromium, visits) {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    headless: true,
    timeout: 30_000,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  let failure = null;
  try {
    await visits(browser);
  } catch (e) {
    failure = e.message;
  } finally {
    await browser.close();
  }
  if (failure) fail(failure);
}
