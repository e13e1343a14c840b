// Drives partita's web console in headless Chromium (playwright-core with
// Debian's chromium). e2e/console_test.go starts the real partita binary
// and runs this file with PARTITA_URL set; each step saves a screenshot to
// $PARTITA_SCREENSHOTS (default test/browser/screenshots).
//
// The steps run in order on one page, as a user would: a wrong key is
// refused; sign in with the key; create a table; insert entities with
// Int64, DateTime, Binary, Guid and Double properties; bad input is refused
// with its reason; query with a filter and read the query class and the
// examined count; edit; page by continuation; download JSONL (partita copy's
// records) and CSV; upload JSONL; every EDM edge value downloaded and
// uploaded, checked against the real `partita copy` ($PARTITA_BIN): the
// download is its export byte for byte, and --verify agrees with a copy
// made from the download and with a table filled by uploading an export;
// stored access policies; CORS rules; generate table,
// policy and account SASs and read with them from this test; sign in with
// a SAS; host-style addressing; a plain-HTTP page cannot sign; delete.
// The heat map step makes a hot partition with requests signed here and
// reads the advisor's finding and the partition rates on the page.
// Everything the console did is checked on the server with requests this
// test signs itself.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import { mkdirSync, existsSync, mkdtempSync, writeFileSync, readFileSync, rmSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const URL_ = process.env.PARTITA_URL;
const ACCOUNT = 'devstoreaccount1';
const KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';
const CHROMIUM = process.env.PARTITA_CHROMIUM || '/usr/bin/chromium';
// The partita binary the server runs, for `partita copy` (e2e/console_test.go sets it).
const BIN = process.env.PARTITA_BIN;
const SHOTS = process.env.PARTITA_SCREENSHOTS || join(dirname(fileURLToPath(import.meta.url)), 'screenshots');
const ENDPOINT = `${URL_}/${ACCOUNT}`;
const TABLE = 'console' + randomBytes(4).toString('hex');
const HOT = 'hot' + randomBytes(4).toString('hex');
const GUID = '4c8a53e7-1a5b-4f0e-9a2c-3f6d5e7b8a90';
const WHEN = '2026-01-02T03:04:05.1234567Z';
const BLOB = 'AQID/w==';
// Host-style addressing: the browser resolves these names to the server.
// Browsers compute HMACs only on secure pages (HTTPS or loopback), so the
// first name is declared secure, as an HTTPS deployment would be, and the
// second is left as a plain-HTTP page.
const PORT = URL_ ? new URL(URL_).port : '';
const HOST_URL = `http://${ACCOUNT}.partita.test:${PORT}`;
const PLAIN_URL = `http://${ACCOUNT}.plain.test:${PORT}`;

let browser, page;
const cspViolations = [];
const pageErrors = [];

before(async () => {
  assert.ok(URL_, 'PARTITA_URL must be set (e2e/console_test.go sets it)');
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install chromium`);
  mkdirSync(SHOTS, { recursive: true });
  // playwright gives every launch a fresh temporary --user-data-dir.
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
      `--host-resolver-rules=MAP ${ACCOUNT}.partita.test 127.0.0.1, MAP ${ACCOUNT}.plain.test 127.0.0.1`,
      `--unsafely-treat-insecure-origin-as-secure=${HOST_URL}`],
  });
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  page = await ctx.newPage();
  page.setDefaultTimeout(20000);
  page.on('console', (m) => { if (/Content.Security.Policy/i.test(m.text())) cspViolations.push(m.text()); });
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  page.on('dialog', (d) => d.accept());
});

after(async () => {
  if (browser) await browser.close();
});

async function shot(name) {
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

// signed sends a SharedKey-signed request from this test, outside the
// browser, to check what the console did on the server.
async function signed(method, path, { body, accept = 'application/json;odata=fullmetadata', query = '' } = {}) {
  const date = new Date().toUTCString();
  const ct = body ? 'application/json' : '';
  const comp = new URLSearchParams(query).get('comp');
  const toSign = [method, '', ct, date, `/${ACCOUNT}/${ACCOUNT}${path}${comp ? '?comp=' + comp : ''}`].join('\n');
  const sig = createHmac('sha256', Buffer.from(KEY, 'base64')).update(toSign).digest('base64');
  const headers = { 'x-ms-date': date, 'x-ms-version': '2019-02-02', Accept: accept, Authorization: `SharedKey ${ACCOUNT}:${sig}` };
  if (body) headers['Content-Type'] = ct;
  return fetch(`${ENDPOINT}${path}${query ? '?' + query : ''}`, { method, headers, body });
}

async function signIn({ key, sas, base = URL_, endpoint = ENDPOINT }) {
  await page.goto(`${base}/_partita/console/`);
  await page.waitForSelector('body[data-ready=true]');
  if (await page.isVisible('#signout')) {
    await page.click('#signout');
    await page.waitForSelector('#signin-form');
  }
  await page.fill('#signin-account', ACCOUNT);
  assert.equal(await page.inputValue('#signin-endpoint'), endpoint);
  if (key !== undefined) {
    await page.check('#signin-mode-key');
    await page.fill('#signin-key', key);
  } else {
    await page.check('#signin-mode-sas');
    await page.fill('#signin-sas', sas);
  }
  await page.click('#signin-submit');
}

function cell(pk, rk, col) {
  return page.locator(`#entities-grid tr[data-pk="${pk}"][data-rk="${rk}"] td[data-col="${col}"]`);
}

async function addProp(name, type, value) {
  await page.click('#ed-add');
  const row = page.locator('#ed-props tbody tr').last();
  await row.locator('.ed-name').fill(name);
  await row.locator('.ed-type').selectOption(type);
  await row.locator('.ed-value').fill(value);
}

async function insert(pk, rk, props) {
  await page.click('#new-entity');
  await page.fill('#ed-pk', pk);
  await page.fill('#ed-rk', rk);
  await page.locator('#ed-props tbody tr').first().locator('button').click(); // the empty row
  for (const p of props) await addProp(...p);
  await page.click('#ed-save');
  await page.waitForSelector('#editor', { state: 'hidden' });
  await page.waitForSelector(`#entities-grid tr[data-pk="${pk}"][data-rk="${rk}"]`);
}

async function runQuery(filter) {
  await page.fill('#q-filter', filter);
  // Blank the figures, then wait for the page to show this query's.
  await page.evaluate(() => { document.getElementById('query-class').textContent = ''; });
  await page.click('#q-run');
  await page.waitForFunction(() => document.getElementById('query-class').textContent !== '');
}

let sasToken;

test('console in a real browser', async (t) => {
  // The steps build on each other: after one fails, the rest fail at once
  // instead of each waiting for its own timeout.
  // Each step ends with a screenshot named after it (FAILED when it failed).
  let failed = null;
  let n = 0;
  const step = (name, fn) => t.test(name, async () => {
    if (failed) throw new Error(`not run: the step "${failed}" failed`);
    const file = `${String(++n).padStart(2, '0')}-${name.replace(/[^A-Za-z0-9]+/g, '-').replace(/-$/, '')}`;
    try {
      await fn();
      await shot(file);
    } catch (err) {
      failed = name;
      await shot(file + '-FAILED').catch(() => {});
      throw err;
    }
  });
  await step('the page is served with a strict CSP', async () => {
    const res = await page.goto(`${URL_}/_partita/console/`);
    assert.equal(res.status(), 200);
    const csp = res.headers()['content-security-policy'];
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /script-src 'self'/);
    assert.match(csp, /connect-src 'self'/);
    assert.equal(res.headers()['cache-control'], 'no-store');
  });

  await step('a wrong key is refused', async () => {
    const wrong = Buffer.from(KEY, 'base64');
    wrong[0] ^= 1;
    await signIn({ key: wrong.toString('base64') });
    await page.waitForFunction(() => document.getElementById('signin-error').textContent !== '');
    const msg = await page.textContent('#signin-error');
    assert.match(msg, /^403 AuthenticationFailed/);
    assert.equal(await page.isVisible('#app'), false);
  });

  await step('sign in with the key', async () => {
    await signIn({ key: KEY });
    await page.waitForSelector('#app', { state: 'visible' });
    assert.match(await page.textContent('#whoami-text'), /devstoreaccount1 · account key/);
    // The key is kept in this tab's session storage, never in local storage.
    assert.equal(await page.evaluate(() => localStorage.length), 0);
  });

  await step('create a table', async () => {
    await page.fill('#new-table', TABLE);
    await page.click('#create-table');
    await page.waitForSelector(`#tables-grid tr[data-table="${TABLE}"]`);
    const res = await signed('GET', `/Tables('${TABLE}')`);
    assert.equal(res.status, 200);
  });

  await step('insert entities with Int64, DateTime, Binary and Guid properties', async () => {
    await page.click(`#tables-grid tr[data-table="${TABLE}"] a`);
    await page.waitForSelector('#tab-entities', { state: 'visible' });
    await insert('p1', 'r1', [['Big', 'Edm.Int64', '9007199254740993'], ['When', 'Edm.DateTime', WHEN],
      ['Blob', 'Edm.Binary', BLOB], ['Id', 'Edm.Guid', GUID], ['Name', 'Edm.String', 'first'], ['Ratio', 'Edm.Double', '5']]);
    await insert('p1', 'r2', [['Big', 'Edm.Int64', '1'], ['Name', 'Edm.String', 'second']]);
    await insert('p2', 'r1', [['Big', 'Edm.Int64', '7']]);
    // What the server stored, read outside the browser.
    const res = await signed('GET', `/${TABLE}(PartitionKey='p1',RowKey='r1')`);
    assert.equal(res.status, 200);
    const e = await res.json();
    assert.equal(e.Big, '9007199254740993');
    assert.equal(e['Big@odata.type'], 'Edm.Int64');
    assert.equal(e.When, WHEN);
    assert.equal(e['When@odata.type'], 'Edm.DateTime');
    assert.equal(e.Blob, BLOB);
    assert.equal(e['Blob@odata.type'], 'Edm.Binary');
    assert.equal(e.Id, GUID);
    assert.equal(e['Id@odata.type'], 'Edm.Guid');
    assert.equal(e.Ratio, 5);
    // And what the grid shows: typed columns, exact values.
    assert.equal(await page.textContent('#entities-grid th[data-col="Big"] .type'), 'Int64');
    assert.equal(await page.textContent('#entities-grid th[data-col="When"] .type'), 'DateTime');
    assert.equal(await page.textContent('#entities-grid th[data-col="Blob"] .type'), 'Binary');
    assert.equal(await page.textContent('#entities-grid th[data-col="Id"] .type'), 'Guid');
    // A whole Double (5.0 on the wire) stays a Double, not an Int32.
    assert.equal(await page.textContent('#entities-grid th[data-col="Ratio"] .type'), 'Double');
    assert.equal(await cell('p1', 'r1', 'Big').textContent(), '9007199254740993');
    assert.equal(await cell('p1', 'r1', 'When').textContent(), WHEN);
  });

  await step('bad input is refused with a reason, and nothing is written', async () => {
    // Checked in the page before any request: a value that is not its type.
    await page.click('#new-entity');
    await page.fill('#ed-pk', 'p9');
    await page.fill('#ed-rk', 'r9');
    const row = page.locator('#ed-props tbody tr').first();
    await row.locator('.ed-name').fill('Big');
    await row.locator('.ed-type').selectOption('Edm.Int64');
    await row.locator('.ed-value').fill('12x');
    await page.click('#ed-save');
    await page.waitForFunction(() => document.getElementById('editor-error').textContent !== '');
    assert.equal(await page.textContent('#editor-error'), 'Big: not an Int64');
    assert.equal((await signed('GET', `/${TABLE}(PartitionKey='p9',RowKey='r9')`)).status, 404);
    // Refused by the service: the service's status, code and message.
    await page.fill('#ed-pk', 'p1');
    await page.fill('#ed-rk', 'r2');
    await row.locator('.ed-value').fill('12');
    await page.click('#ed-save');
    await page.waitForFunction(() => document.getElementById('editor-error').textContent.startsWith('409'));
    assert.match(await page.textContent('#editor-error'), /^409 EntityAlreadyExists: The specified entity already exists\.$/);
    await page.click('#ed-cancel');
    const e = await (await signed('GET', `/${TABLE}(PartitionKey='p1',RowKey='r2')`)).json();
    assert.equal(e.Big, '1');
  });

  await step('query with a filter shows the class and the entities examined', async () => {
    await runQuery("PartitionKey eq 'p1' and Big gt 5L");
    assert.equal(await page.textContent('#query-class'), 'partition');
    assert.equal(await page.textContent('#query-examined'), '2');
    assert.equal(await page.textContent('#query-returned'), '1');
    assert.equal(await page.locator('#entities-grid tbody tr').count(), 1);
    await runQuery("PartitionKey eq 'p1' and RowKey eq 'r2'");
    assert.equal(await page.textContent('#query-class'), 'point');
    assert.equal(await page.textContent('#query-examined'), '1');
    await runQuery('Big gt 5L');
    assert.equal(await page.textContent('#query-class'), 'table');
    assert.equal(await page.textContent('#query-examined'), '3');
    assert.equal(await page.textContent('#query-returned'), '2');
  });

  await step('edit an entity', async () => {
    await runQuery('');
    await page.locator('#entities-grid tr[data-pk="p1"][data-rk="r1"] button[data-action=edit]').click();
    await page.waitForSelector('#editor', { state: 'visible' });
    const big = page.locator('#ed-props tbody tr', { has: page.locator('.ed-name[value="Big"]') });
    assert.equal(await big.locator('.ed-type').inputValue(), 'Edm.Int64');
    await big.locator('.ed-value').fill('-42');
    await shot('edit-form');
    await page.click('#ed-save');
    await page.waitForSelector('#editor', { state: 'hidden' });
    await page.waitForFunction(() => document.querySelector('#entities-grid tr[data-pk="p1"][data-rk="r1"] td[data-col="Big"]')?.textContent === '-42');
    const e = await (await signed('GET', `/${TABLE}(PartitionKey='p1',RowKey='r1')`)).json();
    assert.equal(e.Big, '-42');
    assert.equal(e['Big@odata.type'], 'Edm.Int64');
    // The other typed properties survive the replace unchanged.
    assert.equal(e.When, WHEN);
    assert.equal(e['When@odata.type'], 'Edm.DateTime');
    assert.equal(e.Blob, BLOB);
    assert.equal(e.Id, GUID);
    assert.equal(e['Id@odata.type'], 'Edm.Guid');
    const raw = await (await signed('GET', `/${TABLE}(PartitionKey='p1',RowKey='r1')`, { accept: 'application/json;odata=minimalmetadata' })).text();
    assert.match(raw, /"Ratio":5\.0[,}]/); // still a Double
  });

  await step('page through a query by continuation', async () => {
    await page.fill('#q-top', '1');
    await runQuery('');
    const seen = [];
    const current = () => page.getAttribute('#entities-grid tbody tr', 'data-rk').then(async (rk) => `${await page.getAttribute('#entities-grid tbody tr', 'data-pk')}/${rk}`);
    seen.push(await current());
    assert.equal(await page.textContent('#query-page'), '1');
    for (let i = 2; i <= 3; i++) {
      assert.equal(await page.isDisabled('#q-next'), false);
      await page.evaluate(() => { document.getElementById('query-page').textContent = ''; });
      await page.click('#q-next');
      await page.waitForFunction((n) => document.getElementById('query-page').textContent === String(n), i);
      seen.push(await current());
    }
    assert.deepEqual(seen, ['p1/r1', 'p1/r2', 'p2/r1']);
    await page.evaluate(() => { document.getElementById('query-page').textContent = ''; });
    await page.click('#q-first');
    await page.waitForFunction(() => document.getElementById('query-page').textContent === '1');
    assert.equal(await current(), 'p1/r1');
    await page.fill('#q-top', '50');
  });

  await step('download a query as JSON lines and as CSV', async () => {
    await runQuery("PartitionKey eq 'p1'");
    const fetchFile = async (button) => {
      const dl = page.waitForEvent('download');
      await page.click(button);
      const d = await dl;
      const chunks = [];
      for await (const c of await d.createReadStream()) chunks.push(c);
      return { name: d.suggestedFilename(), text: Buffer.concat(chunks).toString('utf8') };
    };
    const jsonl = await fetchFile('#download-jsonl');
    assert.equal(jsonl.name, `${TABLE}.jsonl`);
    // partita copy's records (docs/COPY.md): table, keys, typed text props, no Timestamp.
    assert.ok(jsonl.text.endsWith('}\n'));
    const lines = jsonl.text.split('\n').slice(0, -1).map((l) => JSON.parse(l));
    assert.deepEqual(lines.map((e) => Object.keys(e).join()), ['table,PartitionKey,RowKey,props', 'table,PartitionKey,RowKey,props']);
    assert.deepEqual(lines.map((e) => `${e.table}/${e.PartitionKey}/${e.RowKey}`), [`${TABLE}/p1/r1`, `${TABLE}/p1/r2`]);
    assert.deepEqual(lines[0].props, [['Big', 'Edm.Int64', '-42'], ['When', 'Edm.DateTime', WHEN], ['Blob', 'Edm.Binary', BLOB],
      ['Id', 'Edm.Guid', GUID], ['Name', 'Edm.String', 'first'], ['Ratio', 'Edm.Double', '5.0']]);
    const csv = await fetchFile('#download-csv');
    assert.equal(csv.name, `${TABLE}.csv`);
    const rows = csv.text.trimEnd().split('\r\n');
    assert.equal(rows.length, 3);
    assert.match(rows[0], /^PartitionKey,RowKey,Timestamp,Big@Edm\.Int64,When@Edm\.DateTime,Blob@Edm\.Binary,Id@Edm\.Guid,Name@Edm\.String,Ratio@Edm\.Double$/);
    assert.match(rows[1], new RegExp(`^p1,r1,[^,]+,-42,${WHEN.replaceAll('.', '\\.')},${BLOB.replaceAll('/', '\\/')},${GUID},first,5$`));
  });

  await step('a CSV cell a spreadsheet would run as a formula is written as text', async () => {
    const csvTable = TABLE + 'csv';
    assert.equal((await signed('POST', '/Tables', { body: JSON.stringify({ TableName: csvTable }) })).status, 201);
    const body = JSON.stringify({ PartitionKey: 'f1', RowKey: '=HYPERLINK("x.example","y")', At: '@SUM(1)', Plus: '+1+1',
      Minus: '-1+2', Tab: '\tx', Neg: -7, NegText: '-7.5', Plain: 'a=b' });
    assert.equal((await signed('POST', `/${csvTable}`, { body })).status, 201);
    await page.fill('#q-table', csvTable);
    await runQuery('');
    const dl = page.waitForEvent('download');
    await page.click('#download-csv');
    const chunks = [];
    for await (const c of await (await dl).createReadStream()) chunks.push(c);
    const [head, row] = Buffer.concat(chunks).toString('utf8').trimEnd().split('\r\n');
    const cols = head.split(',');
    // The row's cells, CSV-unquoted (the formula key holds quotes and a comma).
    const cells = [...row.matchAll(/("(?:[^"]|"")*"|[^,]*)(?:,|$)/g)].map((m) => m[1].startsWith('"') ? m[1].slice(1, -1).replaceAll('""', '"') : m[1]).slice(0, cols.length);
    const cell = (name) => cells[cols.findIndex((c) => c === name || c.startsWith(name + '@'))];
    assert.equal(cell('RowKey'), `'=HYPERLINK("x.example","y")`);
    assert.equal(cell('At'), "'@SUM(1)");
    assert.equal(cell('Plus'), "'+1+1");
    assert.equal(cell('Minus'), "'-1+2");
    assert.equal(cell('Tab'), "'\tx");
    assert.equal(cell('Neg'), '-7');
    assert.equal(cell('NegText'), '-7.5');
    assert.equal(cell('Plain'), 'a=b');
    await page.fill('#q-table', TABLE);
    await runQuery('');
  });

  await step('upload a JSON-lines file', async () => {
    const text = '{"PartitionKey":"up","RowKey":"1","N@odata.type":"Edm.Int64","N":"5","odata.etag":"W/\\"x\\""}\n'
      + '{"PartitionKey":"up","RowKey":"2","Flag":true}\n';
    await page.setInputFiles('#upload-jsonl', { name: 'up.jsonl', mimeType: 'application/x-ndjson', buffer: Buffer.from(text) });
    await page.waitForFunction(() => document.getElementById('status').textContent === 'Uploaded 2 entities');
    const e = await (await signed('GET', `/${TABLE}(PartitionKey='up',RowKey='1')`)).json();
    assert.equal(e.N, '5');
    assert.equal(e['N@odata.type'], 'Edm.Int64');
    const f = await (await signed('GET', `/${TABLE}(PartitionKey='up',RowKey='2')`)).json();
    assert.equal(f.Flag, true);
  });

  await step("download and upload partita copy's JSONL, checked with partita copy", async () => {
    assert.ok(BIN, 'PARTITA_BIN must be set (e2e/console_test.go sets it)');
    const conn = `DefaultEndpointsProtocol=http;AccountName=${ACCOUNT};AccountKey=${KEY};TableEndpoint=${ENDPOINT};`;
    // partita copy must exit 0; its output goes into the failure message.
    const copy = (...args) => {
      try {
        return execFileSync(BIN, ['copy', '--progress', 'none', ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
      } catch (err) {
        throw new Error(`partita copy ${args.join(' ').replaceAll(KEY, '…')}: ${err.status}\n${err.stdout}${err.stderr}`);
      }
    };
    // One range per table, so the export is in key order like a query.
    const exportTable = (table, file) => copy('--from', conn, '--to', join(dir, file), '--tables', table, '--parallel', '1');
    const rename = (text, from, to) => text.replaceAll(`{"table":"${from}",`, `{"table":"${to}",`);
    const dir = mkdtempSync(join(tmpdir(), 'partita-console-'));
    const src = TABLE + 'edge', cp = TABLE + 'copy', up = TABLE + 'up';
    try {
      for (const t of [src, up]) {
        assert.equal((await signed('POST', '/Tables', { body: JSON.stringify({ TableName: t }) })).status, 201);
      }
      // Every type's edge values, written as raw JSON so each is exact on the wire.
      const all = '{"PartitionKey":"edge","RowKey":"all",'
        + '"I64@odata.type":"Edm.Int64","I64":"9223372036854775807","I64min@odata.type":"Edm.Int64","I64min":"-9223372036854775808",'
        + '"I32":2147483647,"I32min":-2147483648,"Whole":5.0,"NegZero":-0.0,"Tenth":0.1,"E21":1E+21,"Tiny":5E-324,"Max":1.7976931348623157E+308,'
        + '"NaN@odata.type":"Edm.Double","NaN":"NaN","Inf@odata.type":"Edm.Double","Inf":"Infinity","NInf@odata.type":"Edm.Double","NInf":"-Infinity",'
        + `"When@odata.type":"Edm.DateTime","When":"${WHEN}","Whole7@odata.type":"Edm.DateTime","Whole7":"2026-01-02T03:04:05Z",`
        + '"Early@odata.type":"Edm.DateTime","Early":"1601-01-01T00:00:00.0000001Z",'
        + `"Bin@odata.type":"Edm.Binary","Bin":"AAEC/w==","NoBin@odata.type":"Edm.Binary","NoBin":"","Id@odata.type":"Edm.Guid","Id":"${GUID}",`
        + `"IdUp@odata.type":"Edm.Guid","IdUp":"${GUID.toUpperCase()}",`
        + '"T":true,"F":false,"S":"line\\nbreak \\"q\\" \\\\ tab\\t ctl\\u0001\\u001f \u00fcn\u00ef \ud83d\ude00 \u2028","Empty":""}';
      const keys = [['edge', `it's "quoted"`], ['\u00fcn\u00ef\u2713 \ud83d\ude00', 'k+&=;,~%'], ['edge', '']];
      for (const body of [all, ...keys.map(([pk, rk]) => JSON.stringify({ PartitionKey: pk, RowKey: rk, N: 1 }))]) {
        const res = await signed('POST', `/${src}`, { body });
        assert.equal(res.status, 201, await res.text());
      }
      // The console's download of the whole table is byte for byte what
      // partita copy exports, and partita copy reads it back.
      await page.fill('#q-table', src);
      await runQuery('');
      const dl = page.waitForEvent('download');
      await page.click('#download-jsonl');
      await (await dl).saveAs(join(dir, 'dl.jsonl'));
      const text = readFileSync(join(dir, 'dl.jsonl'), 'utf8');
      assert.equal(text.split('\n').length, 5);
      // Spot checks of the canonical forms, apart from the comparison below.
      const allProps = new Map(text.split('\n').slice(0, -1).map((l) => JSON.parse(l)).find((r) => r.RowKey === 'all').props.map(([n, ty, v]) => [n, `${ty} ${v}`]));
      for (const [n, want] of [['I64', 'Edm.Int64 9223372036854775807'], ['I32min', 'Edm.Int32 -2147483648'], ['Whole', 'Edm.Double 5.0'],
        ['NegZero', 'Edm.Double -0.0'], ['E21', 'Edm.Double 1E+21'], ['NaN', 'Edm.Double NaN'], ['NInf', 'Edm.Double -Infinity'],
        ['Whole7', 'Edm.DateTime 2026-01-02T03:04:05.0000000Z'], ['NoBin', 'Edm.Binary '], ['IdUp', `Edm.Guid ${GUID}`]]) {
        assert.equal(allProps.get(n), want, n);
      }
      assert.equal(allProps.has('Timestamp'), false);
      exportTable(src, 'export.jsonl');
      const exported = readFileSync(join(dir, 'export.jsonl'), 'utf8');
      assert.equal(text, exported);
      copy('--from', conn, '--to', join(dir, 'dl.jsonl'), '--tables', src, '--verify');
      // Into a new table from the download, then compared with the original.
      writeFileSync(join(dir, 'cp.jsonl'), rename(text, src, cp));
      copy('--from', join(dir, 'cp.jsonl'), '--to', conn);
      copy('--from', conn, '--to', join(dir, 'cp.jsonl'), '--tables', cp, '--verify');
      exportTable(cp, 'cp-export.jsonl');
      assert.equal(readFileSync(join(dir, 'cp-export.jsonl'), 'utf8'), rename(exported, src, cp));

      // partita copy's export uploads through the console into another
      // table. A malformed line stops the upload there, as it stops
      // partita copy: the lines before it are written, nothing of it or
      // after, and the status names its number and reason.
      const good = rename(exported, src, up);
      const goodLines = good.split('\n').slice(0, -1);
      const badLines = [
        [`{"table":"${src}","PartitionKey":"bad","RowKey":"1","props":[]}`, `a record of table ${src}, not of the selected table ${up}`],
        [`{"table":"${up}","PartitionKey":"bad","RowKey":"2","props":[["N","Edm.Int64","007"]]}`, 'property "N": "007" is not a canonical Edm.Int64'],
        [`{"table":"${up}","PartitionKey":"bad","RowKey":"3","props":[["N","Edm.Double","5"]]}`, 'property "N": "5" is not a canonical Edm.Double'],
        [`{"table":"${up}","PartitionKey":"bad","RowKey":"4","props":[["N","Edm.String","a"],["N","Edm.String","b"]]}`, 'property "N" appears twice'],
        [`{"table":"${up}","PartitionKey":"bad","RowKey":"5","props":[["B","Edm.Binary","AB=="]]}`, 'property "B": "AB==" is not a canonical Edm.Binary'],
        [`{"table":"${up}","PartitionKey":"bad","RowKey":"6","props":[["A@odata.type","Edm.String","Edm.Int64"]]}`,
          `property "A@odata.type": a name with '@' or starting with "odata." would reach the destination as an annotation`],
        [`{"table":"${up}","PartitionKey":"bad","RowKey":"7",`, 'not JSON: '],
      ];
      const withBad = (bad) => [...goodLines.slice(0, 2), bad, ...goodLines.slice(2)].join('\n') + '\n';
      await page.fill('#q-table', up);
      await runQuery('');
      for (const [bad, reason] of badLines) {
        await page.evaluate(() => { document.getElementById('status').textContent = ''; });
        await page.setInputFiles('#upload-jsonl', { name: 'up.jsonl', mimeType: 'application/x-ndjson', buffer: Buffer.from(withBad(bad)) });
        await page.waitForFunction(() => /^Uploaded \d+ entities/.test(document.getElementById('status').textContent));
        const msg = await page.textContent('#status');
        assert.ok(msg.startsWith(`Uploaded 2 entities; stopped at line 3, nothing of it or after written: ${reason}`), msg);
      }
      exportTable(up, 'up-export.jsonl');
      assert.equal(readFileSync(join(dir, 'up-export.jsonl'), 'utf8'), goodLines.slice(0, 2).join('\n') + '\n');
      // partita copy reading the file with the annotation-like name stops
      // at the same line with the same reason and writes the same lines.
      const cpBad = TABLE + 'bad';
      writeFileSync(join(dir, 'bad.jsonl'), rename(withBad(badLines[5][0]), up, cpBad));
      assert.throws(() => copy('--from', join(dir, 'bad.jsonl'), '--to', conn), (err) => err.message.includes(`${join(dir, 'bad.jsonl')}:3: ${badLines[5][1]}`));
      exportTable(cpBad, 'bad-export.jsonl');
      assert.equal(readFileSync(join(dir, 'bad-export.jsonl'), 'utf8'), rename(goodLines.slice(0, 2).join('\n') + '\n', up, cpBad));
      await page.evaluate(() => { document.getElementById('status').textContent = ''; });
      await page.setInputFiles('#upload-jsonl', { name: 'up.jsonl', mimeType: 'application/x-ndjson', buffer: Buffer.from(good) });
      await page.waitForFunction((n) => document.getElementById('status').textContent === `Uploaded ${n} entities`, goodLines.length);
      writeFileSync(join(dir, 'up.jsonl'), good);
      copy('--from', conn, '--to', join(dir, 'up.jsonl'), '--tables', up, '--verify');
      exportTable(up, 'up-export.jsonl');
      assert.equal(readFileSync(join(dir, 'up-export.jsonl'), 'utf8'), good);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    await page.fill('#q-table', TABLE);
    await runQuery('');
  });

  await step('stored access policies', async () => {
    await page.click('#tabs button[data-tab=policies]');
    assert.equal(await page.inputValue('#acl-table'), TABLE);
    await page.click('#acl-load');
    await page.waitForFunction(() => /stored access policies/.test(document.getElementById('status').textContent));
    assert.equal(await page.locator('#acl-grid tbody tr').count(), 0);
    await page.click('#acl-add');
    const row = page.locator('#acl-grid tbody tr').last();
    await row.locator('.acl-id').fill('readers');
    await row.locator('.acl-expiry').fill('2099-01-01T00:00:00Z');
    await row.locator('.acl-perm').fill('r');
    await page.click('#acl-save');
    await page.waitForFunction(() => /^Saved the stored access policies/.test(document.getElementById('status').textContent));
    const acl = await (await signed('GET', `/${TABLE}`, { query: 'comp=acl', accept: 'application/xml' })).text();
    assert.match(acl, /<Id>readers<\/Id>/);
    assert.match(acl, /<Permission>r<\/Permission>/);
    await page.click('#acl-load');
    await page.waitForFunction(() => document.querySelectorAll('#acl-grid tbody tr').length === 1);
    assert.equal(await page.locator('#acl-grid tbody tr .acl-id').inputValue(), 'readers');
  });

  await step('CORS rules', async () => {
    await page.click('#tabs button[data-tab=cors]');
    await page.waitForFunction(() => /CORS rule/.test(document.getElementById('status').textContent));
    await page.click('#cors-add');
    const row = page.locator('#cors-grid tbody tr').last();
    await row.locator('.cors-origins').fill('https://app.example');
    await row.locator('.cors-methods').fill('GET,PUT');
    await row.locator('.cors-allowed').fill('x-ms-*');
    await row.locator('.cors-exposed').fill('*');
    await row.locator('.cors-age').fill('60');
    await page.click('#cors-save');
    await page.waitForFunction(() => document.getElementById('status').textContent === '1 CORS rule(s)');
    const props = await (await signed('GET', '/', { query: 'restype=service&comp=properties', accept: 'application/xml' })).text();
    assert.match(props, /<AllowedOrigins>https:\/\/app\.example<\/AllowedOrigins>/);
    assert.match(props, /<AllowedMethods>GET,PUT<\/AllowedMethods>/);
    assert.match(props, /<MaxAgeInSeconds>60<\/MaxAgeInSeconds>/);
  });

  await step('heat map and advisor: a hot partition', async () => {
    // 1,100 inserts into one partition and 40 spread over four others,
    // signed by this test: the advisor judges a table from 1,000 writes
    // in its window, and one partition takes 96% of them.
    assert.equal((await signed('POST', '/Tables', { body: JSON.stringify({ TableName: HOT }) })).status, 201);
    const rows = [];
    for (let i = 0; i < 1100; i++) rows.push(['hot', String(i).padStart(5, '0')]);
    for (let i = 0; i < 40; i++) rows.push([`cool${i % 4}`, String(i).padStart(5, '0')]);
    const insertAll = async (list) => {
      let next = 0;
      const worker = async () => {
        while (next < list.length) {
          const [pk, rk] = list[next++];
          const res = await signed('POST', `/${HOT}`, { body: JSON.stringify({ PartitionKey: pk, RowKey: rk, N: 1 }) });
          assert.equal(res.status, 201, `insert ${pk}/${rk}: ${res.status} ${await res.text()}`);
        }
      };
      await Promise.all(Array.from({ length: 8 }, worker));
    };
    await insertAll(rows);

    await page.click('#tabs button[data-tab=heat]');
    const finding = page.locator(`#heat-findings .finding[data-kind="hot-partition"][data-table="${HOT}"]`);
    await finding.waitFor();
    assert.match(await finding.textContent(), /partition hot/);
    assert.match(await finding.locator('.summary').textContent(), /took 96% of the table's 1140 writes/);
    assert.equal(await finding.locator('[data-evidence=writes]').textContent(), 'writes 1,140');
    assert.equal(await finding.locator('[data-evidence=partitionWrites]').textContent(), 'partitionWrites 1,100');
    assert.match(await finding.locator('.pattern').textContent(), /compound key pattern/);
    assert.match(await finding.locator('.fix').textContent(), /spread the writes over many partitions/);

    const heatRow = (pk) => page.locator(`#heat-tables tr[data-table="${HOT}"][data-pk="${pk}"]`);
    assert.equal(await heatRow('hot').locator('td[data-col=writes]').textContent(), '1,100');
    assert.equal(await heatRow('hot').locator('td[data-col=requests]').textContent(), '1,100');
    for (let i = 0; i < 4; i++) assert.equal(await heatRow(`cool${i}`).locator('td[data-col=writes]').textContent(), '10');
    // Busiest first.
    assert.equal(await page.locator(`#heat-tables [data-heat-table="${HOT}"] tbody tr`).first().getAttribute('data-pk'), 'hot');
    assert.equal(await page.isVisible('#heat-no-findings'), false);

    // Refresh reads the new traffic.
    await insertAll([['hot', 'x1'], ['hot', 'x2'], ['hot', 'x3'], ['hot', 'x4'], ['hot', 'x5']]);
    await page.click('#heat-refresh');
    await page.waitForFunction((t) => document.querySelector(`#heat-tables tr[data-table="${t}"][data-pk="hot"] td[data-col=writes]`)?.textContent === '1,105', HOT);
    assert.equal(await page.textContent('#heat-error'), '');
  });

  await step('generate a SAS and read with it', async () => {
    await page.click('#tabs button[data-tab=sas]');
    await page.check('#sas-kind-table');
    await page.fill('#sas-table', TABLE);
    await page.fill('#sas-spk', 'p1');
    await page.fill('#sas-epk', 'p1');
    await page.click('#sas-generate');
    await page.waitForSelector('#sas-out', { state: 'visible' });
    sasToken = await page.inputValue('#sas-token');
    assert.match(sasToken, /(^|&)sig=/);
    assert.equal(await page.inputValue('#sas-url'), `${ENDPOINT}/${TABLE}?${sasToken}`);
    assert.equal(await page.inputValue('#sas-conn'), `TableEndpoint=${ENDPOINT};SharedAccessSignature=${sasToken}`);
    const h = { 'x-ms-version': '2019-02-02', Accept: 'application/json;odata=nometadata' };
    const res = await fetch(`${ENDPOINT}/${TABLE}()?${sasToken}`, { headers: h });
    assert.equal(res.status, 200);
    const rows = (await res.json()).value.map((e) => `${e.PartitionKey}/${e.RowKey}`);
    assert.deepEqual(rows, ['p1/r1', 'p1/r2']); // p2 is outside the SAS key range
    // The SAS grants read only.
    const put = await fetch(`${ENDPOINT}/${TABLE}(PartitionKey='p1',RowKey='r9')?${sasToken}`, {
      method: 'PUT', headers: { ...h, 'Content-Type': 'application/json' }, body: '{}',
    });
    assert.equal(put.status, 403);

    // A table SAS that takes its permissions and times from the stored
    // access policy "readers" (set above).
    for (const c of ['r', 'a', 'u', 'd']) await page.uncheck(`#sas-p-${c}`);
    await page.fill('#sas-spk', '');
    await page.fill('#sas-epk', '');
    await page.fill('#sas-si', 'readers');
    await page.fill('#sas-expiry', '');
    await page.click('#sas-generate');
    await page.waitForFunction((old) => document.getElementById('sas-token').value !== old, sasToken);
    const siToken = await page.inputValue('#sas-token');
    assert.match(siToken, /(^|&)si=readers(&|$)/);
    assert.doesNotMatch(siToken, /(^|&)(sp|se)=/);
    const bySI = await fetch(`${ENDPOINT}/${TABLE}()?${siToken}`, { headers: h });
    assert.equal(bySI.status, 200);
    assert.equal((await bySI.json()).value.length, 5);

    // An account SAS that may list tables.
    await page.check('#sas-kind-account');
    await page.fill('#sas-expiry', '2099-01-01T00:00');
    await page.click('#sas-generate');
    await page.waitForFunction((old) => document.getElementById('sas-token').value !== old, siToken);
    const acct = await page.inputValue('#sas-token');
    assert.match(acct, /(^|&)ss=t(&|$)/);
    assert.match(acct, /(^|&)srt=sco(&|$)/);
    assert.match(acct, /(^|&)sp=rl(&|$)/);
    assert.equal(await page.inputValue('#sas-url'), `${ENDPOINT}?${acct}`);
    const list = await fetch(`${ENDPOINT}/Tables?${acct}`, { headers: h });
    assert.equal(list.status, 200);
    assert.ok((await list.json()).value.some((t) => t.TableName === TABLE));
    await page.check('#sas-kind-table');
    for (const c of ['r']) await page.check(`#sas-p-${c}`);
  });

  await step('sign in with the SAS', async () => {
    await signIn({ sas: sasToken });
    await page.waitForSelector('#app', { state: 'visible' });
    assert.match(await page.textContent('#whoami-text'), /· SAS ·/);
    await page.waitForSelector('#entities-grid tr[data-pk="p1"][data-rk="r2"]');
    assert.equal(await page.locator('#entities-grid tbody tr').count(), 2);
    assert.equal(await page.isDisabled('#sas-generate'), true);
    // A table SAS may not read the account's heat map: the page shows the
    // service's refusal.
    await page.click('#tabs button[data-tab=heat]');
    await page.waitForFunction(() => document.getElementById('heat-error').textContent !== '');
    assert.equal(await page.textContent('#heat-error'), '403 AuthorizationFailure: This request is not authorized to perform this operation.');
    assert.equal(await page.locator('#heat-findings .finding').count(), 0);
  });

  await step('host-style: the host names the account', async () => {
    await signIn({ key: KEY, base: HOST_URL, endpoint: HOST_URL });
    await page.waitForSelector('#app', { state: 'visible' });
    assert.match(await page.textContent('#whoami-text'), new RegExp(`· ${HOST_URL.replaceAll('.', '\\.')}$`));
    await page.click(`#tables-grid tr[data-table="${TABLE}"] a`);
    await page.waitForSelector('#entities-grid tr[data-pk="p1"][data-rk="r1"]');
    assert.equal(await page.textContent('#query-class'), 'table');
  });

  await step('a page that is not secure says why it cannot sign with the key', async () => {
    await signIn({ key: KEY, base: PLAIN_URL, endpoint: PLAIN_URL });
    await page.waitForFunction(() => document.getElementById('signin-error').textContent !== '');
    assert.match(await page.textContent('#signin-error'), /HTTPS/);
    assert.equal(await page.isVisible('#app'), false);
  });

  await step('delete an entity and the table', async () => {
    await signIn({ key: KEY });
    await page.waitForSelector('#app', { state: 'visible' });
    await page.click(`#tables-grid tr[data-table="${TABLE}"] a`);
    await page.waitForSelector('#entities-grid tr[data-pk="p1"][data-rk="r2"]');
    await page.locator('#entities-grid tr[data-pk="p1"][data-rk="r2"] button[data-action=delete]').click();
    await page.waitForSelector('#entities-grid tr[data-pk="p1"][data-rk="r2"]', { state: 'detached' });
    assert.equal((await signed('GET', `/${TABLE}(PartitionKey='p1',RowKey='r2')`)).status, 404);
    await page.click('#tabs button[data-tab=tables]');
    await page.click(`#tables-grid tr[data-table="${TABLE}"] button[data-delete-table]`);
    await page.waitForSelector(`#tables-grid tr[data-table="${TABLE}"]`, { state: 'detached' });
    assert.equal((await signed('GET', `/Tables('${TABLE}')`)).status, 404);
  });

  await step('no Content-Security-Policy violations and no script errors', () => {
    assert.deepEqual(cspViolations, []);
    assert.deepEqual(pageErrors, []);
  });
});
