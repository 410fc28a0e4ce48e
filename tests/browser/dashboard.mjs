// The dashboard (www/index.html) in a real browser: Debian's chromium, driven by playwright-core.
//   node dashboard.mjs URL HANDLERS_DIR GOOD_SO BAD_SO SCREENSHOT_PREFIX
// Opens URL, waits for hello and xpng to show as live, drops GOOD_SO in as "dropped.so" and waits
// for it to appear, drops BAD_SO in as "broken.so" and waits for its refusal reason, then saves
// screenshots (desktop and phone widths). Prints one JSON line; exits non-zero on any failure.
import { launchChromium } from "./chromium.mjs";
import { copyFileSync, renameSync } from "node:fs";
import { join } from "node:path";

const [url, handlers, good, bad, screenshots] = process.argv.slice(2);
const browser = await launchChromium();
const result = {};
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.on("pageerror", (e) => { result.page_error = String(e); });
  await page.goto(url);
  for (const name of ["hello", "xpng"])
    await page.waitForSelector(`[data-handler="${name}"][data-state="live"]`, { timeout: 10000 });

  // Dropped in the way a deployment does it: written beside, then renamed into place.
  const drop = (from, name) => {
    copyFileSync(from, join(handlers, `.${name}.tmp`));
    renameSync(join(handlers, `.${name}.tmp`), join(handlers, name));
    return Date.now();
  };
  let since = drop(good, "dropped.so");
  await page.waitForSelector('[data-handler="dropped"][data-state="live"]', { timeout: 10000 });
  result.dropped_shown_ms = Date.now() - since;

  since = drop(bad, "broken.so");
  const broken = await page.waitForSelector('[data-handler="broken"][data-state="refused"] .reason', { timeout: 10000 });
  result.broken_shown_ms = Date.now() - since;
  result.broken_reason = await broken.textContent();

  // Some traffic, so the charts and counters show it (and the screenshot is worth looking at).
  for (let i = 0; i < 200; ++i) await fetch(new URL(i % 2 ? "/csp/hello" : "/csp/xpng", url));
  await page.waitForFunction(
    () => Number(document.querySelector('[data-handler="hello"] .numbers b:nth-of-type(1)')?.textContent) > 0 ||
          document.querySelector('[data-handler="hello"]')?.textContent.includes("requests 100"),
    null, { timeout: 10000 });
  result.hello_counted = await page.textContent('[data-handler="hello"] .numbers');
  result.protocols = await page.textContent("#protocols-summary");
  result.sandbox = await page.textContent("#sandbox-summary");
  await page.screenshot({ path: `${screenshots}-desktop.png`, fullPage: true });
  await page.setViewportSize({ width: 390, height: 844 });
  await page.waitForTimeout(600); // one poll at the new width
  await page.screenshot({ path: `${screenshots}-phone.png`, fullPage: true });
  result.phone_overflow = await page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth);
  result.ok = !result.page_error && !result.phone_overflow;
} catch (e) {
  result.ok = false;
  result.error = String(e);
} finally {
  await browser.close();
}
console.log(JSON.stringify(result));
process.exit(result.ok ? 0 : 1);
