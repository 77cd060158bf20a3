import { type BrowserContext, chromium } from "playwright-core";
import { scratchDir } from "./env.ts";

/** Debian's Chromium (.ci/debian-packages installs it), headless, with nothing running in the background. */
const CHROMIUM_FLAGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** A headless Chromium with a fresh profile, driven by playwright-core. */
export function launchChromium(): Promise<BrowserContext> {
  return chromium.launchPersistentContext(scratchDir("chromium-profile"), {
    executablePath: "/usr/bin/chromium",
    headless: true,
    args: CHROMIUM_FLAGS,
  });
}
