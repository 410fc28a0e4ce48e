// examples/chat.cpp in a real browser: Debian's chromium, driven by playwright-core.
//   node chat.mjs URL
// Opens the chat page in two tabs that reached different worker processes (each page is told its
// worker), sends a line from each, and checks that both tabs show both lines. Each tab has a
// browser context of its own, so its own connections: over https, Chromium carries the WebSocket
// on the page's HTTP/2 connection (RFC 8441) when the server allows it. Prints one JSON line;
// exits non-zero on any failure.
import { launchChromium } from "./chromium.mjs";

const [url] = process.argv.slice(2);
const browser = await launchChromium();
const result = { tries: 0 };
try {
  const open = async () => {
    const context = await browser.newContext({ ignoreHTTPSErrors: true });
    const page = await context.newPage();
    page.on("pageerror", (e) => { result.page_error = String(e); });
    await page.goto(url);
    await page.waitForSelector('#state[data-state="open"][data-worker]', { timeout: 10000 });
    return { page, worker: await page.getAttribute("#state", "data-worker") };
  };
  const first = await open();
  let second;
  // Connections spread over the workers as the kernel chooses: open tabs until one lands elsewhere.
  for (; result.tries < 20; ++result.tries) {
    const candidate = await open();
    if (candidate.worker !== first.worker) { second = candidate; break; }
    await candidate.page.context().close();
  }
  if (!second) throw new Error("every tab reached worker " + first.worker);
  result.workers = [first.worker, second.worker];
  result.protocol = await first.page.evaluate(() => performance.getEntriesByType("navigation")[0].nextHopProtocol);
  const say = async (tab, text) => {
    await tab.page.fill("#text", text);
    await tab.page.click("#send");
  };
  await say(first, "hello from a");
  await say(second, "hello from b");
  for (const tab of [first, second])
    await tab.page.waitForFunction(
      () => { const lines = [...document.querySelectorAll("#log li")].map((li) => li.textContent);
              return lines.includes("hello from a") && lines.includes("hello from b"); },
      null, { timeout: 10000 });
  result.lines = await second.page.$$eval("#log li", (items) => items.map((li) => li.textContent));
  result.ok = !result.page_error;
} catch (e) {
  result.ok = false;
  result.error = String(e);
} finally {
  await browser.close();
}
console.log(JSON.stringify(result));
process.exit(result.ok ? 0 : 1);
