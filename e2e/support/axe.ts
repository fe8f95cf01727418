/**
 * axe-core run inside the page itself: injected once per page load, then one `axe.run` per check
 * (a viewport, a colour scheme). @axe-core/playwright's AxeBuilder injects axe again on every
 * check and finishes each run in a new blank page (a renderer process of its own): 6–10 s a check
 * against about 1 s this way, measured on this 2-core machine under load, and the axe sweep makes
 * dozens of checks. `axe.run` sees only same-origin frames: the web client has none, and a page
 * with a frame fails here instead of going half-checked.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { AxeResults, Result, RunOptions } from 'axe-core';
import type { Page } from '@playwright/test';

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

interface AxeCheck {
  /** CSS selectors of the parts to check (all of the page when left out). */
  include?: string[];
  /** Only these rules (all of axe's default rules when left out). */
  rules?: string[];
}

/** axe's violations on the page as it is now. */
export async function axeViolations(page: Page, check: AxeCheck = {}): Promise<Result[]> {
  if (page.frames().length > 1) throw new Error(`axe runs in the top document only, and ${page.url()} has frames`);
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(axeSource);
  const options: RunOptions = check.rules ? { runOnly: { type: 'rule', values: check.rules } } : {};
  const include = check.include?.map((selector) => [selector]) ?? null;
  const results = await page.evaluate(
    ([include, options]) =>
      (window as unknown as { axe: { run(context: unknown, options: RunOptions): Promise<AxeResults> } }).axe.run(include ? { include } : document, options),
    [include, options] as const,
  );
  return results.violations;
}

/** Serious and critical findings, one readable line per element. */
export async function axeProblems(page: Page, check: AxeCheck = {}): Promise<string[]> {
  return (await axeViolations(page, check))
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .flatMap((v) => v.nodes.map((n) => `${v.id}: ${n.target.join(' ')} ${n.failureSummary?.split('\n')[1] ?? ''}`));
}
