// Helpers for the console's browser tests (playwright-core driving Debian's Chromium).
import type { Locator } from 'playwright-core';
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
