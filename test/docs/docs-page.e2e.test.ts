/**
 * /docs renders in a real browser (Debian's Chromium driven by playwright-core) from the edge alone: the page, its
 * Swagger UI assets and /openapi.json all come from the app under test, and every other request is refused, so the
 * page provably works offline. Set DOCS_SCREENSHOT=<file.png> to keep a screenshot.
 */
import type { BrowserContext, Locator } from 'playwright-core';
import { launchTestBrowser, type TestBrowser } from '@gmg/testing';
import { startEdgeHarness, type EdgeHarness } from '../../services/api-edge/src/edge.test-kit';

let h: EdgeHarness;
let chromium: TestBrowser;
let browser: BrowserContext;
beforeAll(async () => {
  h = await startEdgeHarness();
  chromium = await launchTestBrowser({ width: 1280, height: 1600 });
  browser = chromium.context;
});
afterAll(async () => {
  await chromium?.close();
  await h?.close();
});

/** Waits for a schema title in the list, scrolling the virtualized list (when it is one) from its top, a screen at a time. */
async function schemaShown(schemas: Locator, title: RegExp): Promise<void> {
  const item = schemas.getByText(title);
  const scroller = schemas.locator('.models-scroll');
  if ((await scroller.count()) > 0) {
    await scroller.evaluate((el) => el.scrollTo(0, 0));
    const deadline = Date.now() + 20_000;
    while (!(await item.isVisible()) && Date.now() < deadline) {
      const end = await scroller.evaluate((el) => {
        el.scrollBy(0, el.clientHeight / 2);
        return el.scrollTop + el.clientHeight >= el.scrollHeight;
      });
      await item.waitFor({ timeout: 100 }).catch(() => undefined);
      if (end && !(await item.isVisible())) break;
    }
  }
  await item.waitFor({ timeout: 10_000 });
}

it('renders the API reference at /docs offline: title, the operations, and the model request bodies', async () => {
  const page = await browser.newPage();
  const foreign: string[] = [];
  await page.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith(h.baseUrl)) return route.continue();
    foreign.push(url);
    return route.abort();
  });
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));

  const res = await page.goto(`${h.baseUrl}/docs`, { waitUntil: 'load', timeout: 30_000 });
  expect(res?.status()).toBe(200);
  await page.locator('.information-container .title').filter({ hasText: 'Generative media gateway API' }).waitFor({ timeout: 30_000 });
  await page.locator('.opblock-summary-path', { hasText: '/v1/images/generations' }).first().waitFor({ timeout: 10_000 });
  // the schema list: every model's request body from the registry, and the art actions (titles rendered capitalized)
  const schemas = page.locator('section.models');
  await schemas.locator('.models-control').waitFor({ timeout: 10_000 });
  // from 100 schemas on, Swagger UI renders only the part of the list in view (its own scroll box): scroll it to each
  for (const title of [/^lumen-2-pro request body$/i, /^pixel-v6 request body$/i, /^artgen upscale request body$/i]) await schemaShown(schemas, title);

  // open the image submission and see a model's example body
  await page.locator('.opblock-summary-path', { hasText: '/v1/images/generations' }).first().click();
  await page.locator('.opblock-body', { hasText: 'lumen-2-pro' }).first().waitFor({ timeout: 10_000 });

  if (process.env.DOCS_SCREENSHOT) await page.screenshot({ path: process.env.DOCS_SCREENSHOT, fullPage: false });
  expect(errors).toEqual([]);
  expect(foreign).toEqual([]);
});
