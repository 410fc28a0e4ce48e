// Compressed answers in a real browser: Debian's chromium, driven by playwright-core.
//   node compressed.mjs BASE_URL
// From a page of the server: fetches a JSON handler's answer (Chromium offers gzip, deflate, br and
// zstd), and opens an EventSource on a stream that sends one event and then nothing: the event is
// decoded while the stream stays open, so nothing held it back in the compressor. Prints one JSON
// line; exits non-zero on any failure.
import { launchChromium } from "./chromium.mjs";

const [base] = process.argv.slice(2);
const browser = await launchChromium();
const result = {};
try {
  const page = await browser.newPage();
  page.on("pageerror", (e) => { result.page_error = String(e); });
  await page.goto(base + "/csp/compressible?type=text/html&size=600");
  Object.assign(result, await page.evaluate(async () => {
    const answer = await fetch("/csp/compressible?size=20000");
    const body = await answer.text();
    const timing = performance.getEntriesByType("resource").find((e) => e.name.includes("size=20000"));
    return { json_coding: answer.headers.get("content-encoding"), json_length: body.length,
             json_encoded_size: timing ? timing.encodedBodySize : -1,
             json_decoded_size: timing ? timing.decodedBodySize : -1 };
  }));
  result.event = await page.evaluate(() => new Promise((resolve, reject) => {
    const source = new EventSource("/csp/stream/sse_once");
    const timer = setTimeout(() => { source.close(); reject(new Error("no event within 10 s")); }, 10000);
    source.addEventListener("tick", (e) => { clearTimeout(timer); source.close(); resolve(e.data); });
  }));
  result.event_coding = await page.evaluate(async () => {
    // The same stream's head, read by fetch: it is compressed as Chromium asked.
    const controller = new AbortController();
    const answer = await fetch("/csp/stream/sse_once", { signal: controller.signal });
    const coding = answer.headers.get("content-encoding");
    controller.abort();
    return coding;
  });
  result.ok = !result.page_error && result.json_length === 20000 && result.event === "first" &&
              ["zstd", "br", "gzip"].includes(result.json_coding) && result.event_coding === result.json_coding &&
              result.json_encoded_size > 0 && result.json_encoded_size < result.json_decoded_size / 3;
} catch (e) {
  result.ok = false;
  result.error = String(e);
} finally {
  await browser.close();
}
console.log(JSON.stringify(result));
process.exit(result.ok ? 0 : 1);
