// The dashboard over HTTPS in a real browser: Debian's chromium, driven by playwright-core.
//   node dashboard_https.mjs URL CERTIFICATE_FILE SCREENSHOT
// Opens URL (a self-signed certificate: its errors are ignored), waits for hello and xpng to
// show as live and for the HTTPS certificates table to list CERTIFICATE_FILE as serving, checks
// the page came over TLS and over HTTP/2 (the navigation's and every fetch's nextHopProtocol is
// "h2": ALPN chose it), and saves a screenshot. Prints one JSON line; exits non-zero on any failure.
import { launchChromium } from "./chromium.mjs";

const [url, certificate, screenshot] = process.argv.slice(2);
const browser = await launchChromium();
const result = {};
try {
  const page = await browser.newPage({ ignoreHTTPSErrors: true, viewport: { width: 1280, height: 900 } });
  page.on("pageerror", (e) => { result.page_error = String(e); });
  const response = await page.goto(url);
  result.protocol = (await response.securityDetails())?.protocol ?? null;
  for (const name of ["hello", "xpng"])
    await page.waitForSelector(`[data-handler="${name}"][data-state="live"]`, { timeout: 10000 });
  await page.waitForSelector("#tls:not([hidden])", { timeout: 10000 });
  const row = await page.waitForSelector(`#certificates tr:has-text("${certificate}")`, { timeout: 10000 });
  result.certificate_row = (await row.textContent()).trim();
  result.summary = await page.textContent("#tls-summary");
  result.next_hop = await page.evaluate(() => performance.getEntriesByType("navigation")[0].nextHopProtocol);
  result.resource_hops = await page.evaluate(() =>
    [...new Set(performance.getEntriesByType("resource").map((e) => e.nextHopProtocol))]);
  await page.screenshot({ path: screenshot, fullPage: true });
  result.ok = !result.page_error && result.certificate_row.includes("serving") && result.protocol !== null;
} catch (e) {
  result.ok = false;
  result.error = String(e);
} finally {
  await browser.close();
}
console.log(JSON.stringify(result));
process.exit(result.ok ? 0 : 1);
