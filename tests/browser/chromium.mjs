// Debian's chromium as the browser tests start it, driven by playwright-core: CHROMIUM names
// another binary. No sandbox (the tests run as root in CI), no GPU, no /dev/shm (small in containers).
import { chromium } from "playwright-core";

export function launchChromium() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
  });
}
