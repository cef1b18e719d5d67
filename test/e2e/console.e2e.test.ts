/**
 * The web console (`/console`, packages/console) in a real headless Chromium (Debian's, driven by playwright-core)
 * against the real gateway: api-edge, worker-image and billing as processes, the upstream simulator, Postgres, Redis.
 * One scripted story (issue 40's acceptance): an operator signs in, creates an account, tops it up twice with the same
 * click (booked once: the balance read back through the API), creates a key; sees a channel's key cooling (the
 * simulator rate-limits it: POST /__sim/keys) and brings it back after the test button says it answers; finds a
 * failed task by its trace id and reads why; a customer signs in with the new key and sees the task and its image.
 * Every page: a screenshot (CONSOLE_SCREENSHOTS, default test-results/console/, git-ignored) and axe-core (injected
 * into the page) with no `serious` or `critical` violation. Then the first load's script, gzip-compressed: < 300 KB.
 * This compilation has no DOM library: code that runs in the page reaches its globals through `InPage`.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import type { Page } from 'playwright-core';
import { adminApi, fundedKeyInGroup, launchTestBrowser, REPO_ROOT, startSimStack, waitFor, type SimStack, type TestBrowser } from '@gmg/testing';

/** The page's globals, untyped here (no DOM lib in this compilation). */
type InPage = any;

const ADMIN_TOKEN = 'e2e-admin-token-console-0123456789';
const MAIN_KEY = 'sim-key-console-main-00000000aaaa';
const FLAKY_KEY = 'sim-key-console-flaky-0000000bbbb';
const SCREENS = process.env.CONSOLE_SCREENSHOTS ?? path.join(REPO_ROOT, 'test-results', 'console');
const CONSOLE_DIST = path.join(REPO_ROOT, 'packages', 'console', 'dist');
/** The budget for the console's first load: compressed script. */
const SCRIPT_BUDGET_GZIP = 300 * 1024;
const AXE_SOURCE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

describe('console e2e: an operator and a customer in headless Chromium', () => {
  let stack: SimStack;
  let base: string;
  /** A stand-in OTLP/HTTP collector (answers 200, keeps nothing): tracing on gives every request a trace id. */
  let collector: Server;
  let browser: TestBrowser;
  let page: Page;
  const admin = adminApi(() => base, ADMIN_TOKEN);
  /** What the page logged as an error (a CSP violation, a failed load): the story ends with none. */
  const pageErrors: string[] = [];
  // the story's shared facts, set by the step that learns them
  let accountId = '';
  let customerKey = '';
  let flakyChannelId = '';
  let failedTraceId = '';
  let failedTaskId = '';
  let imageTaskId = '';

  const shot = (name: string) => page.screenshot({ path: path.join(SCREENS, `console-${name}.png`), fullPage: true });

  /** axe-core on the page as it is now: no serious or critical violation (the violations are printed on failure). */
  const axe = async (name: string) => {
    // evaluated through the DevTools protocol (not a <script>), so the page's CSP does not need to allow it
    await page.evaluate(AXE_SOURCE);
    const violations = await page.evaluate(async () => {
      const r = await (globalThis as InPage).axe.run((globalThis as InPage).document, { resultTypes: ['violations'] });
      return (r.violations as Array<{ id: string; impact: string; help: string; nodes: Array<{ target: string[] }> }>).map((v) => ({
        id: v.id,
        impact: v.impact,
        help: v.help,
        nodes: v.nodes.slice(0, 3).map((n) => n.target.join(' ')),
      }));
    });
    const bad = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
    expect({ page: name, violations: bad }).toEqual({ page: name, violations: [] });
  };

  /** Both checks of a page, once it shows `heading`. */
  const visit = async (name: string, heading: string | RegExp) => {
    await page.getByRole('heading', { level: 1, name: heading }).waitFor();
    await page.waitForFunction(() => !(globalThis as InPage).document.querySelector('[role=status].muted'), undefined, { timeout: 15_000 });
    await shot(name);
    await axe(name);
  };

  const v1 = async (method: string, p: string, key: string, body?: unknown) => {
    const r = await fetch(`${base}${p}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: r.status, headers: r.headers, body: (await r.json()) as any };
  };
  const taskEnd = (id: string, key: string) =>
    waitFor(
      async () => {
        const t = (await v1('GET', `/v1/tasks/${id}`, key)).body.data;
        return ['completed', 'failed'].includes(t?.status) ? t : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 200, what: `task ${id} to end` },
    );
  const flakyKeyRow = async () => (await admin('GET', `/api/channels/${flakyChannelId}/keys`)).body.data[0];

  beforeAll(async () => {
    execFileSync(process.execPath, [path.join(REPO_ROOT, 'packages', 'console', 'build.mjs')], { encoding: 'utf8' });
    collector = createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
    });
    await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
    stack = await startSimStack({
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(collector.address() as AddressInfo).port}` },
      database: 'gmg_e2e_console',
      timeScale: '0.1',
      simEnv: { SIM_API_KEY: MAIN_KEY, SIM_API_KEYS: FLAKY_KEY },
      channel: { groups: ['default'], apiKey: MAIN_KEY },
    });
    // the probe would bring a cooled key back on its own: far away, so only the operator's click can
    const worker = { POLL_INTERVAL_SCALE: '0.1', SWEEP_INTERVAL_MS: '1000', CHANNEL_PROBE_INTERVAL_MS: '3600000' };
    const [edge] = await Promise.all([
      stack.start('api-edge', (url) => ({
        ADMIN_TOKEN,
        PUBLIC_BASE_URL: url,
        CONSOLE_DIR: CONSOLE_DIST,
        // the simulator serves its result files itself (a vendor's CDN): the console's CSP must let <img> load them
        CONSOLE_MEDIA_SOURCES: stack.simUrl,
        MESSAGES_CHANNEL_CACHE_TTL_MS: '0',
      })),
      stack.start('worker-image', worker),
      stack.start('billing', { SWEEP_INTERVAL_MS: '1000' }),
    ]);
    base = edge.url;

    // A second channel, for group `flaky` only, whose one key the simulator rate-limits: one task of that group is
    // refused with a 429, which cools the key; the task is then cancelled so that no retry touches the key again.
    const ch = await admin('POST', '/api/channels', { name: 'flaky', protocol: 'gateway', base_url: stack.simUrl, api_keys: [FLAKY_KEY], groups: ['flaky'] });
    expect(ch.status).toBe(201);
    flakyChannelId = ch.body.data.id;
    const sim = await fetch(`${stack.simUrl}/__sim/keys`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ key: FLAKY_KEY, state: 'rate_limited' }),
    });
    expect(sim.status).toBe(200);
    const flakyCustomer = await fundedKeyInGroup(stack.db.dataSource, 'flaky');
    const sub = await v1('POST', '/v1/images/generations', flakyCustomer.key, {
      model: 'lumen-2-flex',
      prompt: 'a cooling key',
      size: '1:1',
      resolution: '1MP',
    });
    expect(sub.status).toBe(200);
    await waitFor(async () => ((await flakyKeyRow()).status === 'cooling' ? true : undefined), {
      timeoutMs: 30_000,
      intervalMs: 200,
      what: 'the rate-limited key to cool',
    });
    expect((await v1('POST', `/v1/tasks/${sub.body.data[0].task_id}/cancel`, flakyCustomer.key)).status).toBe(200);

    mkdirSync(SCREENS, { recursive: true });
    console.log(`console screenshots: ${SCREENS}`);
    browser = await launchTestBrowser({ width: 1280, height: 900 });
    page = browser.context.pages()[0] ?? (await browser.context.newPage());
    page.on('console', (m) => {
      // the one refused request of the story: the wrong token on the sign-in page (the browser logs its 401)
      if (m.type() === 'error' && !/Failed to load resource: .* 401/.test(m.text()))
        pageErrors.push(`${m.text()} (${m.location().url}:${m.location().lineNumber}, on ${page.url()})`);
    });
    page.on('pageerror', (e) => pageErrors.push(e.message));
    // where a CSP violation comes from (file, line, column, element): the console message alone does not say
    await page.addInitScript(() => {
      (globalThis as InPage).addEventListener('securitypolicyviolation', (e: InPage) => {
        (globalThis as InPage).console.error(`CSP ${e.violatedDirective} at ${e.sourceFile}:${e.lineNumber}:${e.columnNumber} on <${e.target?.nodeName}>`);
      });
    });
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await stack?.stop();
    await new Promise((resolve) => (collector ? collector.close(resolve) : resolve(undefined)));
  });

  it('serves the console under a strict CSP; the sign-in page refuses a wrong token in words', async () => {
    const res = await fetch(`${base}/console/`);
    expect(res.status).toBe(200);
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("style-src 'self'");
    const html = await res.text();
    // no inline script or style: every <script> and stylesheet comes from /console/assets
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(html).not.toMatch(/<style|style=/);

    await page.goto(`${base}/console/`);
    await page.waitForSelector('body[data-ready="true"]');
    await page.getByLabel('Admin token', { exact: true }).fill('not-the-token');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect(page.getByRole('alert').textContent()).resolves.toMatch(/token|auth/i);
    await shot('sign-in');
    await axe('sign-in');
  });

  it('an operator signs in: the overview, the token kept in the tab only', async () => {
    await page.getByLabel('Admin token', { exact: true }).fill(ADMIN_TOKEN);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await visit('overview', 'Overview');
    const stored = await page.evaluate(() => {
      const g = globalThis as InPage;
      return { local: g.localStorage.length, cookie: g.document.cookie, url: g.location.href, session: g.sessionStorage.length };
    });
    expect(stored).toEqual({ local: 0, cookie: '', url: `${base}/console/`, session: 1 });
    expect(await page.getByRole('link', { name: 'Queues' }).getAttribute('href')).toBe('/admin/queues');
    // by keyboard: the first Tab reaches "Skip to content", Enter puts the focus on the page's main region
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => (globalThis as InPage).document.activeElement?.textContent)).toBe('Skip to content');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => (globalThis as InPage).document.activeElement?.id === 'main');
  });

  it('creates an account and tops it up twice with the same click: booked once', async () => {
    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Accounts' }).click();
    await visit('accounts', 'Accounts');
    await page.getByRole('button', { name: 'New account' }).click();
    await page.getByRole('dialog').getByLabel('Name').fill('acme-console');
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.getByRole('heading', { level: 1, name: 'Account acme-console' }).waitFor();
    accountId = page.url().split('/').pop()!;

    const topups: number[] = [];
    page.on('response', (r) => {
      if (r.url().endsWith(`/api/accounts/${accountId}/topups`)) topups.push(r.status());
    });
    await page.getByRole('button', { name: 'Top up' }).click();
    await page.getByRole('dialog').getByLabel('Amount').fill('5');
    await page.getByRole('button', { name: 'Book top-up' }).dblclick();
    await page.getByRole('dialog').getByRole('status').filter({ hasText: 'Booked' }).waitFor();
    await waitFor(async () => (topups.length === 2 ? true : undefined), { timeoutMs: 10_000, intervalMs: 50, what: 'both top-up answers' });
    expect(topups.sort()).toEqual([200, 201]); // the second is the replay: 200, nothing credited
    await shot('top-up');
    await axe('top-up dialog');
    const account = await admin('GET', `/api/accounts/${accountId}`);
    expect(account.body.data.balance).toBe(5);
    await page.keyboard.press('Escape');
    await page.getByRole('dialog').waitFor({ state: 'detached' });
    await expect(page.getByTestId('balance').textContent()).resolves.toBe('5.00');
    await visit('account', 'Account acme-console');
  });

  it('creates a key: the secret shown once, and it works', async () => {
    await page.getByRole('button', { name: 'New key' }).click();
    await page.getByRole('dialog').getByLabel('Name').fill('console-key');
    await page.getByRole('button', { name: 'Create key' }).click();
    const secret = page.getByTestId('secret');
    await secret.waitFor();
    customerKey = (await secret.textContent())!.trim();
    await shot('key-created');
    await axe('key dialog');
    await page.keyboard.press('Escape');
    await page.getByRole('dialog').waitFor({ state: 'detached' });
    await page.locator('tr[data-key-id]').filter({ hasText: 'console-key' }).waitFor();
    // the list shows no secret; the key answers for its account
    expect(await page.content()).not.toContain(customerKey);
    expect((await v1('GET', '/api/balance', customerKey)).body.data.account_id).toBe(accountId);

    // the customer's work: one image that renders, one that the vendor fails
    const ok = await v1('POST', '/v1/images/generations', customerKey, { model: 'lumen-2-flex', prompt: 'a lighthouse', size: '1:1', resolution: '1MP' });
    const bad = await v1('POST', '/v1/images/generations', customerKey, { model: 'lumen-2-flex', prompt: 'oops [sim:fail]', size: '1:1', resolution: '1MP' });
    expect([ok.status, bad.status]).toEqual([200, 200]);
    imageTaskId = ok.body.data[0].task_id;
    failedTaskId = bad.body.data[0].task_id;
    failedTraceId = bad.headers.get('x-trace-id')!;
    expect(failedTraceId).toMatch(/^[0-9a-f]{32}$/);
    expect((await taskEnd(imageTaskId, customerKey)).status).toBe('completed');
    expect((await taskEnd(failedTaskId, customerKey)).status).toBe('failed');
  });

  it('sees the flaky channel’s key cooling and brings it back once the test button says it answers', async () => {
    expect((await flakyKeyRow()).status).toBe('cooling');
    await page.getByRole('link', { name: 'Channels' }).click();
    await page.getByRole('heading', { level: 1, name: 'Channels' }).waitFor();
    const card = page.locator('section[data-channel="flaky"]');
    const keyRow = card.locator('tbody tr');
    await keyRow.locator('.badge-cooling').waitFor();
    expect(await keyRow.textContent()).toContain('Rate limit reached');
    await visit('channels', 'Channels');
    await card.getByRole('button', { name: 'Test' }).click();
    await card.locator('li[data-test-status="ok"]').waitFor({ timeout: 20_000 });
    await shot('channel-tested');
    await card.getByRole('button', { name: 'Bring back (test passed)' }).click();
    await keyRow.locator('.badge-active').waitFor();
    expect((await flakyKeyRow()).status).toBe('active');
  });

  it('finds the failed task by its trace id and reads why it failed', async () => {
    await page.getByRole('link', { name: 'Tasks' }).click();
    await visit('tasks', 'Tasks and calls');
    await page.getByLabel('Trace id or request id').fill(failedTraceId);
    await page.getByRole('button', { name: 'Find' }).click();
    const stored = (await admin('GET', `/api/tasks/${failedTaskId}`)).body.data;
    expect(stored.error.message.length).toBeGreaterThan(0);
    // the lookup's row already says why (its `error` is the message itself)
    expect(await page.locator('tbody tr').filter({ hasText: failedTaskId }).textContent()).toContain(stored.error.message);
    await page.getByRole('link', { name: failedTaskId }).click();
    await page.getByRole('heading', { name: 'Why it failed' }).waitFor();
    const why = await page.locator('.task-error p').textContent();
    expect(why).toContain(stored.error.message);
    expect(await page.locator('.facts').textContent()).toContain(failedTraceId);
    await visit('task-failed', `Task ${failedTaskId}`);
  });

  it('prices and groups: an edit is shown as a diff before it is saved', async () => {
    await page.getByRole('link', { name: 'Prices and groups' }).click();
    await page.getByRole('heading', { level: 1, name: 'Prices and groups' }).waitFor();
    await page.locator('tbody input[type=number]').first().waitFor();
    await visit('pricing', 'Prices and groups');
    const first = page.locator('tbody input[type=number]').first();
    const before = await first.inputValue();
    await first.fill(String(Number(before) + 1));
    await page.getByRole('button', { name: 'Review 1 change(s)' }).click();
    const diff = page.getByRole('dialog').locator('table.diff');
    expect(await diff.locator('del').textContent()).toBe(before);
    expect(await diff.locator('ins').textContent()).toBe(String(Number(before) + 1));
    await shot('pricing-diff');
    await axe('pricing diff');
    await page.keyboard.press('Escape'); // not saved: the table stays as it was
  });

  it('a customer signs in with the key: balance, activity, the task and its image', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('a customer (API key)').check();
    await page.getByLabel('API key', { exact: true }).fill(customerKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { level: 1, name: 'Account acme-console' }).waitFor();
    await page.getByRole('link', { name: imageTaskId }).waitFor();
    await visit('customer-home', 'Account acme-console');
    // the CSV export: fetched with the key (a plain link could not send it) and saved as a file
    const download = page.waitForEvent('download');
    await page.getByRole('button', { name: 'Export usage (CSV, 30 days)' }).click();
    const csv = readFileSync((await (await download).path())!, 'utf8');
    expect(csv.split('\r\n')[0]).toMatch(/^day,model,tasks,/);
    await page.getByRole('link', { name: imageTaskId }).click();
    await page.waitForFunction(
      () => {
        const img = (globalThis as InPage).document.querySelector('.result img');
        return Boolean(img && img.complete && img.naturalWidth > 0);
      },
      undefined,
      { timeout: 20_000 },
    );
    await visit('customer-task', `Task ${imageTaskId}`);
  });

  it('no page logged an error (a CSP violation, a failed request)', () => {
    expect(pageErrors).toEqual([]);
  });

  it("the console's first load is under 300 KB of gzip-compressed script", async () => {
    const html = await (await fetch(`${base}/console/`)).text();
    const scripts = [...html.matchAll(/<script[^>]*\bsrc="\/console\/([^"]+)"/g)].map((m) => m[1]!);
    expect(scripts.length).toBeGreaterThan(0);
    let total = 0;
    for (const s of scripts) {
      const served = Buffer.from(await (await fetch(`${base}/console/${s}`)).arrayBuffer());
      expect(served.equals(readFileSync(path.join(CONSOLE_DIST, s)))).toBe(true);
      total += gzipSync(served, { level: 9 }).length;
    }
    console.log(`console first load: ${scripts.join(', ')} = ${(total / 1024).toFixed(1)} KB gzip (budget ${SCRIPT_BUDGET_GZIP / 1024} KB)`);
    expect(total).toBeLessThan(SCRIPT_BUDGET_GZIP);
  });
});
