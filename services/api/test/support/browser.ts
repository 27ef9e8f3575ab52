// Helpers for the console's browser tests (playwright-core driving Debian's Chromium).
import type { Locator, Page } from 'playwright-core';
import { waitFor } from '@taskapi/testing';

/** Waits until the locator's text matches, failing with the last text seen. */
export async function waitForText(locator: Locator, expected: string | RegExp, timeoutMs = 10_000): Promise<string> {
  let last = '';
  const matches = (t: string) => (typeof expected === 'string' ? t.includes(expected) : expected.test(t));
  try {
    await waitFor(
      async () => {
        last = await locator.innerText({ timeout: 500 }).catch(() => '');
        return matches(last);
      },
      { timeoutMs },
    );
  } catch {
    throw new Error(`expected text ${String(expected)}; last seen: ${JSON.stringify(last)}`);
  }
  return last;
}

/**
 * Records on `problems` what a console page must never show: a script error, a console error (CSP
 * violations are reported as such; failed requests are recorded below, with their URL), and any
 * answer of 400 or more but the one expected refusal, the login page asking whether a session exists.
 */
export function watchConsolePage(page: Page, problems: string[]): void {
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) problems.push(`console: ${m.text()}`);
  });
  page.on('response', (r) => {
    if (r.status() >= 400 && !(r.status() === 401 && r.url().endsWith('/api/auth/session'))) problems.push(`HTTP ${r.status()}: ${r.url()}`);
  });
}
