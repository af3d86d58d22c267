import fs from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

/** Debian's Chromium, which .ci/run installs (playwright cannot download browsers here). */
export const CHROMIUM = '/usr/bin/chromium';
export const chromiumInstalled = (): boolean => fs.existsSync(CHROMIUM);

/** Headless Chromium with the flags this machine needs (no sandbox as root, no background network: see ../shared/notes). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}
