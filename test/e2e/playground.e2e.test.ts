/**
 * The playground (`/playground`) in a real headless Chromium (Debian's, driven by playwright-core) against the real
 * gateway: api-edge, worker-image, worker-video, worker-artgen and billing as processes, the upstream simulator, Postgres, Redis.
 * A person's path: paste a key, pick a model, fill the generated form, submit, watch, see the image / play the video;
 * a bad field shows the server's error next to that field. Screenshots go to PLAYGROUND_SCREENSHOTS (default: a
 * temporary directory, printed).
 * This repo compiles without the DOM library: code that runs in the page reaches its globals through `InPage`
 * (functions, not strings: the page's CSP forbids eval, which string predicates would need).
 */
import { mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import sharp from 'sharp';
import { AccountRepository, ApiKeyRepository } from '@gmg/db';
import { launchTestBrowser, startSimStack, type SimStack, type TestBrowser, type TestDatabase } from '@gmg/testing';

/** The page's globals, untyped here (no DOM lib in this compilation). */
type InPage = any;

const ADMIN_TOKEN = 'e2e-admin-token-0123456789';
const SCREENS = process.env.PLAYGROUND_SCREENSHOTS ?? path.join(os.tmpdir(), 'gmg-playground-screens');

describe('playground e2e: a person renders an image and a video in headless Chromium', () => {
  let stack: SimStack;
  let db: TestDatabase;
  let base: string;
  let key: string;
  let browser: TestBrowser;
  let context: BrowserContext;
  let page: Page;
  const shot = (name: string) => page.screenshot({ path: path.join(SCREENS, `playground-${name}.png`), fullPage: true });

  beforeAll(async () => {
    stack = await startSimStack({ database: 'gmg_playground', timeScale: '0.3' });
    db = stack.db;
    const worker = { POLL_INTERVAL_SCALE: '0.1', SWEEP_INTERVAL_MS: '1000' };
    const [edge] = await Promise.all([
      stack.start('api-edge', (url) => ({ ADMIN_TOKEN, PUBLIC_BASE_URL: url })),
      stack.start('worker-image', worker),
      stack.start('worker-video', worker),
      stack.start('worker-artgen', worker),
      stack.start('billing', { SWEEP_INTERVAL_MS: '1000' }),
    ]);
    base = edge.url;
    const accounts = new AccountRepository(db.dataSource);
    const account = await accounts.create({ name: 'playground-e2e' });
    await accounts.topup(account.id, 1_000_000_000n);
    key = (await new ApiKeyRepository(db.dataSource).create({ accountId: account.id })).secret;

    mkdirSync(SCREENS, { recursive: true });
    console.log(`playground screenshots: ${SCREENS}`);
    browser = await launchTestBrowser({ width: 1100, height: 900 });
    context = browser.context;
    page = context.pages()[0] ?? (await context.newPage());
    await page.goto(`${base}/playground/`);
    await page.waitForSelector('body[data-ready="true"]');
    await page.fill('#api-key', key);
    await page.click('#connect');
    await page.waitForSelector('#model option[value="lumen-2-pro"]', { state: 'attached' });
  });

  afterAll(async () => {
    await browser?.close();
    await stack?.stop();
  });

  const pick = async (model: string) => {
    await page.selectOption('#model', model);
    await page.waitForSelector(`#model-info:has-text("${model === 'artgen' ? '/v1/artgen' : '/generations'}")`);
  };

  it('serves the page with a strict CSP and keeps the key out of storage, cookies and the URL', async () => {
    const res = await fetch(`${base}/playground/`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-security-policy')).toContain("script-src 'self'");
    const stored = await page.evaluate(() => {
      const g = globalThis as InPage;
      return { local: g.localStorage.length, session: g.sessionStorage.length, cookie: g.document.cookie, url: g.location.href };
    });
    expect(stored).toEqual({ local: 0, session: 0, cookie: '', url: `${base}/playground/` });
  });

  it('lumen-2-pro: the form follows the schema (enums as selects, ranges as sliders), the render reaches the image', async () => {
    await pick('lumen-2-pro');
    // generated from the JSON Schema: an enum is a select, a bounded number a slider, a refused field is absent
    expect(await page.locator('.field[data-field="resolution"] select').count()).toBe(1);
    expect(await page.locator('.field[data-field="safety_tolerance"] input[type=range]').count()).toBe(1);
    expect(await page.locator('.field[data-field="steps"]').count()).toBe(0);
    expect(await page.locator('.field[data-field="image_urls"] input[type=file]').count()).toBe(1);
    await page.fill('[name=prompt]', 'a lighthouse at dusk [sim:slow]');
    await page.selectOption('[name=resolution]', '"1MP"');
    await page.fill('[name=size]', '16:9');
    await shot('form');
    await page.click('#submit');
    // the progress bar moves while the task renders (or the task is already done: the screenshot is then taken late)
    await page.waitForFunction(
      () => {
        const d = (globalThis as InPage).document;
        const status = d.body.dataset.taskStatus;
        return (status === 'processing' && Number(d.querySelector('#progress').value) > 0) || status === 'completed';
      },
      undefined,
      { timeout: 60_000 },
    );
    await shot('progress');
    await page.waitForSelector('body[data-task-status="completed"]', { timeout: 60_000 });
    const img = page.locator('#result img');
    await img.waitFor();
    await page.waitForFunction(() => {
      const el = (globalThis as InPage).document.querySelector('#result img');
      return Boolean(el && el.complete && el.naturalWidth > 0);
    });
    const size = await page.evaluate(() => {
      const el = (globalThis as InPage).document.querySelector('#result img');
      return { w: el.naturalWidth as number, h: el.naturalHeight as number };
    });
    expect(size.w / size.h).toBeCloseTo(16 / 9, 1);
    await shot('result');
  });

  it("a bad field shows the server's error next to that field (a 400: no task)", async () => {
    await pick('lumen-2-pro');
    await page.fill('[name=prompt]', 'a lighthouse');
    await page.fill('[name=safety_tolerance]', '9');
    const answer = page.waitForResponse((r) => r.url().endsWith('/v1/images/generations'));
    await page.click('#submit');
    expect((await answer).status()).toBe(400);
    const err = page.locator('.field[data-field="safety_tolerance"] .field-error');
    await err.waitFor();
    expect(await err.textContent()).toMatch(/safety_tolerance.*between 0 and 5/);
    expect(await page.locator('.field[data-field="safety_tolerance"]').getAttribute('class')).toContain('invalid');
    expect(await page.locator('#form-error').isHidden()).toBe(true);
    await shot('field-error');
  });

  it('an image field uploads a local file through POST /v1/uploads/images and takes its link', async () => {
    await pick('lumen-2-pro');
    const png = await sharp({ create: { width: 96, height: 64, channels: 3, background: '#c84' } })
      .png()
      .toBuffer();
    const uploaded = page.waitForResponse((r) => r.url().endsWith('/v1/uploads/images'));
    await page.setInputFiles('input[data-upload-for="image_urls"]', { name: 'reference.png', mimeType: 'image/png', buffer: png });
    expect((await uploaded).status()).toBe(200);
    await page.waitForFunction(() => /\/v1\/uploads\/img_[A-Za-z0-9_-]+\.png$/.test((globalThis as InPage).document.querySelector('[name=image_urls]').value));
    const link = await page.inputValue('[name=image_urls]');
    const served = await fetch(link);
    expect(served.headers.get('content-type')).toBe('image/png');
    expect(Buffer.from(await served.arrayBuffer()).equals(png)).toBe(true);
  });

  it('pixel-v6: a video render reaches a playable video', async () => {
    await pick('pixel-v6');
    await page.fill('[name=prompt]', 'waves on a shore');
    await page.selectOption('[name=resolution]', '"540p"');
    await page.click('#submit');
    await page.waitForSelector('body[data-task-status="completed"]', { timeout: 60_000 });
    // metadata loaded and a duration known: Chromium can decode and play the file
    await page.waitForFunction(
      () => {
        const v = (globalThis as InPage).document.querySelector('#result video');
        return Boolean(v && v.readyState >= 1 && v.duration > 0);
      },
      undefined,
      { timeout: 20_000 },
    );
    const video = await page.evaluate(() => {
      const v = (globalThis as InPage).document.querySelector('#result video');
      return { duration: v.duration as number, width: v.videoWidth as number, error: (v.error ? v.error.code : null) as number | null };
    });
    expect(video.error).toBeNull();
    expect(video.duration).toBeGreaterThan(0);
    expect(video.width).toBeGreaterThan(0);
    await shot('video');
  });

  it('art suite: imagine reaches its grid, and a button (U1) is clickable for the follow-up', async () => {
    await pick('artgen');
    await page.fill('[name=prompt]', 'a red fox in snow --ar 3:2');
    await page.selectOption('[name=speed]', '"fast"');
    await page.click('#submit');
    await page.waitForSelector('body[data-task-status="completed"]', { timeout: 60_000 });
    const grid = await page.locator('#task-id').textContent();
    await page.locator('#buttons button', { hasText: 'U1' }).waitFor();
    expect(await page.locator('#buttons button').count()).toBeGreaterThanOrEqual(9); // U1-4, reroll, V1-4
    expect(await page.locator('#result img').count()).toBe(4);
    await shot('artgen-grid');
    const followUp = page.waitForResponse((r) => r.url().endsWith('/v1/artgen/generations/action'));
    await page.locator('#buttons button', { hasText: 'U1' }).click();
    expect((await followUp).status()).toBe(200);
    await page.waitForFunction((parent) => (globalThis as InPage).document.querySelector('#task-id').textContent !== parent, grid);
    await page.waitForSelector('body[data-task-status="completed"]', { timeout: 60_000 });
    await page.waitForFunction(() => {
      const d = (globalThis as InPage).document;
      return d.querySelectorAll('#result img').length === 1 && d.querySelector('#result img').naturalWidth > 0;
    });
    await page.locator('#buttons button', { hasText: 'Vary (Strong)' }).waitFor();
    await shot('artgen-upscale');
  });
});
