import { spawnSync } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import puppeteer, { type Browser, type ElementHandle, type Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DifferentlyClient } from '../../sdk/client.ts';
import { type ControlPlaneProcess, startControlPlaneProcess } from '../helpers/control-plane-process.ts';

/**
 * The web console in a real browser (Debian's chromium, which .ci/run installs), against `npm start` as
 * its own process: every step is what a person does (type, click, press keys) and every check is what
 * the page shows. Screenshots of each page go to reports/console/ (kept by CI as artefacts).
 */
const chromium = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find(
  (path) => spawnSync(path, ['--version']).status === 0,
);
if (chromium === undefined && process.env.CI !== undefined)
  throw new Error('chromium is missing: .ci/run installs it');
const hasBwrap = spawnSync('bwrap', ['--version']).status === 0;

const repo = resolve(import.meta.dirname, '../..');
const screenshots = join(repo, 'reports/console');
/** A label a hostile tenant sets: shown as text, it never runs. */
const hostileLabel = '<img src=x onerror="window.__pwned=1">';

describe.runIf(chromium !== undefined && hasBwrap)('the web console', { timeout: 180_000 }, () => {
  let dir: string;
  let plane: ControlPlaneProcess;
  let browser: Browser;
  let page: Page;
  let consoleUrl: string;
  let admin: DifferentlyClient;
  let acme: { orgId: string; key: string; adminKey: string };
  let otherSandbox: string;
  /** A webhook endpoint of the test's: answers 204 to every delivery. */
  let receiver: { url: string; close: () => Promise<void> };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'differently-console-'));
    // As root the jails run as an unprivileged user, who must reach the devhost root inside it.
    await chmod(dir, 0o755);
    await mkdir(screenshots, { recursive: true });
    plane = await startControlPlaneProcess({
      dir,
      config: {
        devMode: true,
        pools: [
          { name: 'local', adapter: 'devhost', config: { root: join(dir, 'devhost') } },
          // Priced, so that a budget means something.
          {
            name: 'fake',
            adapter: 'fake',
            prices: { perCreate: 1, running: { perVcpuSecond: 0.01, perGiBSecond: 0 } },
          },
        ],
        templates: [{ name: 'default', description: 'The host environment' }],
      },
      args: ['--port', '0', '--containers', '2'],
    });
    consoleUrl = /console: {2,}(\S+)/.exec(plane.output())?.[1] ?? '';
    admin = new DifferentlyClient({ endpoint: plane.url, apiKey: plane.adminKey });
    const org = await admin.admin.createOrg({ name: 'acme' });
    acme = {
      orgId: org.id,
      key: (await admin.admin.createKey(org.id, { name: 'dev' })).key,
      adminKey: (await admin.admin.createKey(org.id, { name: 'ops', role: 'admin' })).key,
    };
    const other = await admin.admin.createOrg({ name: 'other' });
    const otherKey = (await admin.admin.createKey(other.id, { name: 'dev' })).key;
    otherSandbox = (
      await new DifferentlyClient({ endpoint: plane.url, apiKey: otherKey }).createSandbox({
        labels: { secret: 'other' },
      })
    ).id;
    const server = createServer((request, response) => {
      request.resume();
      request.on('end', () => {
        response.statusCode = 204;
        response.end();
      });
    });
    await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
    receiver = {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
      close: () => new Promise<void>((closed) => server.close(() => closed())),
    };
    browser = await puppeteer.launch({
      executablePath: chromium,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
    });
    page = await browser.newPage();
    await page.setViewport({ width: 1280, height: 900 });
    // The page's policy violations, as the browser reports them (evaluated by the browser itself, not
    // subject to the page's policy).
    await page.evaluateOnNewDocument(() => {
      const seen: string[] = [];
      (window as unknown as { __violations: string[] }).__violations = seen;
      document.addEventListener('securitypolicyviolation', (event) =>
        seen.push(`${event.violatedDirective} ${event.blockedURI}`),
      );
    });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await plane?.stop();
    await receiver?.close();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  const shot = (name: string) => page.screenshot({ path: join(screenshots, `${name}.png`), fullPage: true });
  const text = () => page.evaluate(() => document.body.textContent ?? '');
  const waitForText = (wanted: string | RegExp, timeout = 60_000) =>
    page.waitForFunction(
      (source: string, flags: string | null) =>
        flags === null
          ? (document.body.textContent ?? '').includes(source)
          : new RegExp(source, flags).test(document.body.textContent ?? ''),
      { timeout, polling: 200 },
      typeof wanted === 'string' ? wanted : wanted.source,
      typeof wanted === 'string' ? null : wanted.flags,
    );
  const violations = () =>
    page.evaluate(() => (window as unknown as { __violations: string[] }).__violations);
  /** axe-core's serious and critical violations on the page as it is now. */
  const accessibility = async () => {
    const source = await readFile(join(repo, 'node_modules/axe-core/axe.min.js'), 'utf8');
    await page.evaluate(source);
    return page.evaluate(async () => {
      const axe = (
        window as unknown as {
          axe: { run: () => Promise<{ violations: { id: string; impact: string; nodes: unknown[] }[] }> };
        }
      ).axe;
      const result = await axe.run();
      return result.violations
        .filter((v) => v.impact === 'serious' || v.impact === 'critical')
        .map((v) => `${v.id} (${v.nodes.length})`);
    });
  };
  const signIn = async (key: string) => {
    await page.goto(consoleUrl, { waitUntil: 'domcontentloaded' });
    await page.waitForSelector('#api-key');
    await page.type('#api-key', key);
    await page.keyboard.press('Enter');
  };

  it('is served by the control plane under a strict policy, and npm start prints its URL', async () => {
    expect(consoleUrl).toBe(`${plane.url}/console/`);
    const answer = await fetch(consoleUrl);
    expect(answer.status).toBe(200);
    const policy = answer.headers.get('content-security-policy') ?? '';
    expect(policy).toContain("script-src 'self'");
    expect(policy).toContain("frame-ancestors 'none'");
    expect(policy).not.toContain('unsafe-inline');
    expect(policy).not.toContain('unsafe-eval');
    expect(answer.headers.get('cache-control')).toBe('no-store');
    const html = await answer.text();
    const script = /src="(assets\/app-[^"]+\.js)"/.exec(html)?.[1];
    expect(script).toBeDefined();
    const asset = await fetch(`${consoleUrl}${script}`);
    expect(asset.status).toBe(200);
    expect(asset.headers.get('content-type')).toContain('text/javascript');
    expect(asset.headers.get('cache-control')).toContain('immutable');
    // Nothing from another origin: every script and stylesheet is the console's own.
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
    expect((await fetch(`${plane.url}/console/assets/..%2F..%2Fpackage.json`)).status).toBe(404);
    expect((await fetch(`${plane.url}/console`, { redirect: 'manual' })).headers.get('location')).toBe(
      'console/',
    );
  });

  it('signs in with a key kept in session storage only, and a bad key is refused', async () => {
    await signIn('dk_not_a_key');
    await waitForText('unauthenticated');
    await shot('sign-in-refused');
    await page.click('#api-key');
    await page.keyboard.down('Control');
    await page.keyboard.press('KeyA');
    await page.keyboard.up('Control');
    await page.keyboard.press('Backspace');
    await page.keyboard.type(acme.key);
    await page.keyboard.press('Enter');
    await waitForText('Live list');
    expect(page.url()).not.toContain(acme.key);
    const stored = await page.evaluate(() => ({
      session: Object.values(sessionStorage),
      local: Object.keys(localStorage).length,
      cookie: document.cookie,
    }));
    expect(stored).toEqual({ session: [acme.key], local: 0, cookie: '' });
    expect(plane.output()).not.toContain(acme.key);
  });

  it('creates a sandbox with the keyboard, watches it reach running, and shows a hostile label as text', async () => {
    await page.click('input[name="labels"]');
    await page.keyboard.type(`owner=${hostileLabel}`);
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    await page.keyboard.type('local');
    await page.keyboard.press('Enter');
    await waitForText(/Created sbx_/);
    const id = await page.$eval('p[role="status"] a', (link) => link.textContent ?? '');
    const settled = await page.waitForSelector(
      `tr[data-sandbox="${id}"] .status-running, tr[data-sandbox="${id}"] .status-failed`,
      { timeout: 90_000 },
    );
    expect(await settled?.evaluate((status) => status.textContent)).toBe('running');
    expect(await text()).toContain(`owner=${hostileLabel}`);
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    expect(await page.$$('img')).toHaveLength(0);
    await shot('sandboxes');
    expect(await accessibility()).toEqual([]);
  });

  it('runs a command in a sandbox and shows its streamed output, HTML and ANSI as text', async () => {
    await page.click('tr[data-sandbox] a');
    await waitForText('Run a command');
    await page.click('#command');
    await page.keyboard.type(`echo hello-console; printf '\\033[31m<b>red</b>\\n'`);
    await page.keyboard.press('Enter');
    await waitForText('exit code 0').catch(async (error: unknown) => {
      await shot('command-failed');
      throw error;
    });
    const output = await page.$eval('pre.output', (pre) => pre.textContent ?? '');
    expect(output).toContain('hello-console');
    expect(output).toContain('␛[31m<b>red</b>');
    expect(await page.$$('pre.output b')).toHaveLength(0);
    // Its placement, and its lifecycle from the audit chain.
    expect(await text()).toMatch(/Chosen pool: local/);
    await waitForText('sandbox.create');
    await shot('sandbox');
    expect(await accessibility()).toEqual([]);
  });

  it('opens a terminal on the sandbox and types into its shell', async () => {
    await page.click('button::-p-text(Open a terminal)');
    await page.waitForSelector('.terminal .xterm');
    await page.waitForFunction(() => document.activeElement?.classList.contains('xterm-helper-textarea'), {
      timeout: 30_000,
    });
    await page.keyboard.type('echo $((6*7))-from-the-terminal\n');
    await page.waitForFunction(
      () => document.querySelector('.terminal .xterm-rows')?.textContent?.includes('42-from-the-terminal'),
      { timeout: 30_000, polling: 200 },
    );
    await shot('terminal');
    await page.click('button::-p-text(Close the terminal)');
  });

  it('uploads a file with a hostile name, lists it as text, and downloads it', async () => {
    const name = '<img src=x onerror=alert(1)>notes.txt';
    const local = join(dir, name);
    await writeFile(local, 'uploaded from the console\n');
    const downloads = join(dir, 'downloads');
    await mkdir(downloads);
    const cdp = await page.createCDPSession();
    await cdp.send('Browser.setDownloadBehavior', { behavior: 'allow', downloadPath: downloads });
    const upload = await page.waitForSelector('#upload');
    await (upload as ElementHandle<HTMLInputElement>).uploadFile(local);
    await page.click('button::-p-text(Upload)');
    const row = await page.waitForSelector(`tr[data-file="${name}"]`, { timeout: 30_000 });
    expect(await row?.evaluate((cell) => cell.querySelector('td')?.textContent)).toBe(name);
    expect(await page.$$('tr[data-file] img')).toHaveLength(0);
    await row?.$eval('button', (button) => (button as HTMLButtonElement).click());
    const deadline = Date.now() + 30_000;
    let saved: string[] = [];
    // The browser saves it under a name of its own making (it replaces < and > in file names).
    const complete = () => saved.filter((file) => !file.endsWith('.crdownload'));
    while (Date.now() < deadline && complete().length === 0) {
      await new Promise((settle) => setTimeout(settle, 100));
      saved = await readdir(downloads);
    }
    expect(complete()).toEqual([expect.stringMatching(/notes\.txt$/)]);
    expect(await readFile(join(downloads, complete()[0] ?? ''), 'utf8')).toBe('uploaded from the console\n');
    await shot('files');
  });

  it('shows why a pool was rejected', async () => {
    await page.goto(`${consoleUrl}#/sandboxes`, { waitUntil: 'domcontentloaded' });
    await waitForText('Live list');
    await page.type('input[name="capabilities"]', 'network.egress.allowlist');
    await page.keyboard.press('Enter');
    await waitForText(/Created sbx_/);
    await page.click('p[role="status"] a');
    await page.waitForSelector('tr[data-rejected="local"]', { timeout: 60_000 });
    const reason = await page.$eval(
      'tr[data-rejected="local"] td:nth-child(2)',
      (cell) => cell.textContent ?? '',
    );
    expect(reason).toContain('network.egress.allowlist');
    // The pool it went to is priced: its page shows the create's price and what its running time adds.
    await waitForText(/Cost so far\$1\.\d+; \$\d+\.\d+ held of the \d{4}-\d{2} budget/);
    await shot('placement-rejection');
  });

  it("runs a sandbox's lifecycle actions from its page: pause, resume, snapshot, extend its TTL, delete", async () => {
    // The page of the sandbox the test before created (on the fake pool, which has every action).
    const status = () => page.$eval('.details .status', (element) => element.textContent);
    const act = async (label: string, after: string) => {
      await page.waitForSelector(`button::-p-text(${label}):not([disabled])`, { timeout: 30_000 });
      await page.click(`button::-p-text(${label})`);
      await page.waitForFunction(
        (wanted: string) => document.querySelector('.details .status')?.textContent === wanted,
        { timeout: 60_000, polling: 200 },
        after,
      );
    };
    expect(await status()).toBe('running');
    await act('Pause', 'paused');
    await act('Resume', 'running');
    await page.click('button::-p-text(Snapshot)');
    await waitForText('Snapshot: requested');
    const expires = () =>
      page.evaluate(
        () =>
          [...document.querySelectorAll('.details dt')].find((term) => term.textContent === 'Expires')
            ?.nextElementSibling?.textContent ?? '',
      );
    const before = await expires();
    await page.click('button::-p-text(Extend TTL)');
    await waitForText('Extend TTL: requested');
    // The page reads the sandbox again: its expiry is now an hour from the extension.
    await page.waitForFunction(
      (was: string) =>
        [...document.querySelectorAll('.details dt')].find((term) => term.textContent === 'Expires')
          ?.nextElementSibling?.textContent !== was,
      { timeout: 30_000, polling: 200 },
      before,
    );
    expect(Date.parse(await expires())).toBeGreaterThan(Date.parse(before));
    page.once('dialog', (dialog) => void dialog.accept());
    await page.click('button::-p-text(Delete)');
    await page.waitForFunction(
      () =>
        ['terminating', 'terminated'].includes(document.querySelector('.details .status')?.textContent ?? ''),
      { timeout: 60_000, polling: 200 },
    );
    await shot('sandbox-deleted');
  });

  it('shows a budget refusal, and the budget against what is spent and reserved', async () => {
    await admin.admin.setBudget(acme.orgId, 0.5);
    await page.goto(`${consoleUrl}#/sandboxes`, { waitUntil: 'domcontentloaded' });
    await waitForText('Live list');
    await page.type('input[name="pools"]', 'fake');
    await page.keyboard.press('Enter');
    await waitForText("more than the org's monthly budget of 0.5");
    expect(await page.$eval('section p[role="alert"]', (alert) => alert.textContent ?? '')).toMatch(
      /^quota_exceeded: this sandbox can never run/,
    );
    await shot('budget-refusal');
    await page.goto(`${consoleUrl}#/usage`, { waitUntil: 'domcontentloaded' });
    await waitForText('left of $0.50');
    await page.waitForSelector('.chart canvas');
    // The month's history, from the sandboxes' costs: the deleted one's charge is in it.
    const chart = await page.$eval('.chart', (element) => element.getAttribute('aria-label') ?? '');
    expect(chart).toMatch(/spent now \$[1-9]/);
    await shot('usage');
    expect(await accessibility()).toEqual([]);
  });

  it('searches the audit chain', async () => {
    await page.goto(`${consoleUrl}#/audit`, { waitUntil: 'domcontentloaded' });
    await page.waitForSelector('input[type="search"]');
    await waitForText('sandbox.create');
    await page.type('input[type="search"]', 'sandbox.create');
    await page.waitForFunction(
      () =>
        [...document.querySelectorAll('tbody tr td:nth-child(3)')].every((cell) =>
          cell.textContent?.startsWith('sandbox.create'),
        ),
      { timeout: 10_000 },
    );
    // A member key reads the chain; verifying it is an admin key's.
    expect(await text()).toContain('Verifying the chain needs an admin key');
    await shot('audit');
    expect(await accessibility()).toEqual([]);
  });

  it('shows the trust report per pool', async () => {
    await page.goto(`${consoleUrl}#/trust`, { waitUntil: 'domcontentloaded' });
    // The keyboard first reaches the skip link, which takes it to the page's content.
    await page.waitForSelector('tr[data-pool="local"]');
    await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Skip to content');
    await page.keyboard.press('Enter');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('main');
    await page.waitForSelector('tr[data-pool="local"]');
    expect(await page.$eval('tr[data-pool="local"]', (row) => row.textContent ?? '')).toContain('devhost');
    await shot('trust');
    expect(await accessibility()).toEqual([]);
    expect(await violations()).toEqual([]);
  });

  it("a tenant key sees neither another org's sandbox nor the admin pages", async () => {
    await page.goto(`${consoleUrl}#/sandboxes/${otherSandbox}`, { waitUntil: 'domcontentloaded' });
    await waitForText('not_found');
    expect(await text()).not.toContain('secret=other');
    await page.goto(`${consoleUrl}#/sandboxes`, { waitUntil: 'domcontentloaded' });
    await waitForText('Live list');
    expect(await text()).not.toContain(otherSandbox);
    await page.goto(`${consoleUrl}#/admin`, { waitUntil: 'domcontentloaded' });
    await waitForText('This page is not one this key may see.');
    expect(await page.$$('a[href="#/admin"]')).toHaveLength(0);
  });

  it("an organization's admin key verifies its chain and sees its own organization only", async () => {
    await page.click('button::-p-text(Sign out)');
    await signIn(acme.adminKey);
    await waitForText('(admin key)');
    await waitForText('Keys');
    expect(await text()).not.toContain('← Organizations');
    await page.goto(`${consoleUrl}#/audit`, { waitUntil: 'domcontentloaded' });
    await page.click('button::-p-text(Verify the chain)');
    await waitForText(/The chain is intact: \d+ events checked/);
    await shot('audit-verified');
    expect(await accessibility()).toEqual([]);
  });

  it('the bootstrap admin key sees the organizations, their keys, and every pool', async () => {
    await page.click('button::-p-text(Sign out)');
    await signIn(plane.adminKey);
    await waitForText('Organizations');
    await page.waitForSelector(`tr[data-org="${acme.orgId}"]`);
    await page.click(`tr[data-org="${acme.orgId}"] a`);
    await waitForText('Keys');
    await waitForText('ops');
    // A webhook to a receiver of the test's, and a sandbox whose events it receives: the page lists them.
    await admin.admin.setBudget(acme.orgId, null);
    const hook = await admin.admin.createWebhook(acme.orgId, {
      url: receiver.url,
      events: ['sandbox.running'],
    });
    const sandbox = await new DifferentlyClient({ endpoint: plane.url, apiKey: acme.key }).createSandbox({
      placement: { allowedPools: ['fake'] },
      ttlSeconds: 60,
    });
    await page.reload({ waitUntil: 'domcontentloaded' });
    await page.waitForSelector(`li[data-webhook="${hook.id}"] button[aria-expanded]`);
    await page.click(`li[data-webhook="${hook.id}"] button[aria-expanded]`);
    const delivered = await page.waitForFunction(
      (id: string) => {
        const row = [...document.querySelectorAll('tr[data-delivery]')].find((each) =>
          each.textContent?.includes(id),
        );
        const cells = [...(row?.children ?? [])].map((cell) => cell.textContent ?? '');
        return cells.length > 0 && cells[5] !== 'not yet' ? cells : undefined;
      },
      { timeout: 60_000, polling: 250 },
      sandbox.id,
    );
    expect(await delivered.jsonValue()).toEqual([
      'sandbox.running',
      sandbox.id,
      expect.any(String),
      '1',
      '204',
      expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
    ]);
    await shot('admin-org');
    expect(await accessibility()).toEqual([]);
    await page.goto(`${consoleUrl}#/trust`, { waitUntil: 'domcontentloaded' });
    await page.waitForSelector('tr[data-pool="fake"]');
    await shot('pools');
    expect(await violations()).toEqual([]);
  });
});
