// A browser app on another origin uses partita with a table SAS, under the
// account's CORS rules, in headless Chromium (playwright-core with Debian's
// chromium). e2e/cors_browser_test.go (TestBrowserCORS) starts partita,
// fills the table, sets the rules (the app's origin: ExposedHeaders
// "x-ms-*,ETag"; a second app's: "*"), serves the pages and sets:
//
//   PARTITA_URL              partita
//   PARTITA_CORS_TABLE       the table, with PARTITA_CORS_COUNT entities
//   PARTITA_CORS_SAS         a table SAS (sp=raud)
//   PARTITA_CORS_APP         the page of the origin whose rule exposes "x-ms-*,ETag"
//   PARTITA_CORS_COOKIE_APP  the page of the origin whose rule exposes "*"
//   PARTITA_CORS_STRANGER    a page of an origin the rules do not name
//
// Each step is what the app's own code would do with fetch(), and reads
// only what the browser lets a page read: a response header the CORS
// answer does not expose is null to the page. Without PARTITA_CORS_SAS (as
// when TestConsole runs every file here) the tests are skipped.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { chromium } from 'playwright-core';

const URL_ = process.env.PARTITA_URL;
const ACCOUNT = 'devstoreaccount1';
const CHROMIUM = process.env.PARTITA_CHROMIUM || '/usr/bin/chromium';
const TABLE = process.env.PARTITA_CORS_TABLE;
const SAS = process.env.PARTITA_CORS_SAS;
const APP = process.env.PARTITA_CORS_APP;
const COOKIE_APP = process.env.PARTITA_CORS_COOKIE_APP;
const STRANGER = process.env.PARTITA_CORS_STRANGER;
const COUNT = Number(process.env.PARTITA_CORS_COUNT);
const BASE = `${URL_}/${ACCOUNT}/${TABLE}`;
const skip = SAS ? false : 'run by e2e TestBrowserCORS, which sets PARTITA_CORS_*';

// What a browser client of the Table service sends on a write: every one
// but Accept makes the request non-simple, so the browser sends a
// preflight (OPTIONS) first and the write only if partita allows it.
const WRITE_HEADERS = {
  'Content-Type': 'application/json',
  Accept: 'application/json;odata=nometadata',
  'x-ms-version': '2019-02-02',
  DataServiceVersion: '3.0;NetFx',
  MaxDataServiceVersion: '3.0;NetFx',
};

let browser, app, cookieApp, stranger;
const strangerConsole = [];
const pageErrors = [];

before(async () => {
  if (skip) return;
  assert.ok(URL_ && TABLE && APP && COOKIE_APP && STRANGER && COUNT > 0, 'PARTITA_URL and PARTITA_CORS_* must be set');
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install chromium`);
  assert.notEqual(new URL(APP).origin, new URL(URL_).origin, 'the page must be on another origin than partita');
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const open = async (url) => {
    const p = await (await browser.newContext()).newPage();
    p.setDefaultTimeout(20000);
    p.on('pageerror', (e) => pageErrors.push(String(e)));
    await p.goto(url);
    return p;
  };
  app = await open(APP);
  cookieApp = await open(COOKIE_APP);
  stranger = await open(STRANGER);
  stranger.on('console', (m) => strangerConsole.push(m.text()));
});

after(async () => {
  if (browser) await browser.close();
  assert.deepEqual(pageErrors, [], 'errors on the pages');
});

// pageFetch runs fetch(url, init) in page p and returns what the page's
// code can see: the status, the response headers the browser exposes to it
// (lower-case names) and the body; or the error fetch rejected with.
function pageFetch(p, url, init = {}) {
  return p.evaluate(async ({ url, init }) => {
    try {
      const res = await fetch(url, init);
      return { status: res.status, headers: Object.fromEntries(res.headers), text: await res.text() };
    } catch (e) {
      return { error: String(e) };
    }
  }, { url, init });
}

const seen = (r) => `the page sees only these headers: ${Object.keys(r.headers ?? {}).join(', ')}`;
const entityURL = (rk) => `${BASE}(PartitionKey='p9',RowKey='${rk}')?${SAS}`;

// readAll queries the table from page p as a browser client does: $top=2
// pages, each next one asked for with the x-ms-continuation-* values the
// previous response carried, until a response carries none. It returns the
// keys read and the responses. Its filter leaves out partition p9, where
// the pages write.
async function readAll(p, init = {}) {
  const keys = [], pages = [];
  const filter = `&$filter=${encodeURIComponent("PartitionKey lt 'p9'")}`;
  let cont = '';
  while (pages.length <= COUNT) {
    const r = await pageFetch(p, `${BASE}()?${SAS}&$top=2${filter}${cont}`, {
      ...init, headers: { Accept: 'application/json;odata=nometadata' },
    });
    pages.push(r);
    assert.equal(r.error, undefined, `page ${pages.length}: fetch failed`);
    assert.equal(r.status, 200, `page ${pages.length}: ${r.text}`);
    keys.push(...JSON.parse(r.text).value.map((e) => `${e.PartitionKey}/${e.RowKey}`));
    const npk = r.headers['x-ms-continuation-nextpartitionkey'];
    const nrk = r.headers['x-ms-continuation-nextrowkey'];
    if (!npk) break;
    cont = `&NextPartitionKey=${encodeURIComponent(npk)}` + (nrk ? `&NextRowKey=${encodeURIComponent(nrk)}` : '');
  }
  return { keys, pages };
}

test('a $top=2 query follows x-ms-continuation-* from page to page and reads every entity', { skip }, async () => {
  const { keys, pages } = await readAll(app);
  // The bug this test is for: "x-ms-*" sent as is in
  // Access-Control-Expose-Headers hid the continuation from the page, and
  // the client's query ended after the first page without an error.
  assert.equal(keys.length, COUNT,
    `read ${keys.length} of ${COUNT} entities in ${pages.length} page(s): ${keys}; on the last, ${seen(pages.at(-1))}`);
  assert.ok(pages.length >= 3, `${pages.length} pages of $top=2 for ${COUNT} entities`);
  assert.deepEqual(keys, [...keys].sort(), 'entities out of key order');
  assert.equal(new Set(keys).size, COUNT, `an entity read twice: ${keys}`);
  assert.ok(pages[0].headers['x-ms-request-id'], `no x-ms-request-id; ${seen(pages[0])}`);
});

test('writes that need a preflight: insert-or-replace returns an ETag the page uses for MERGE and DELETE', { skip }, async () => {
  const put = await pageFetch(app, entityURL('from-page'), {
    method: 'PUT', headers: WRITE_HEADERS,
    body: JSON.stringify({ PartitionKey: 'p9', RowKey: 'from-page', Written: 'by the page' }),
  });
  assert.equal(put.error, undefined, 'PUT: fetch failed (preflight refused?)');
  assert.equal(put.status, 204, put.text);
  const etag = put.headers.etag;
  assert.match(etag ?? '', /^W\/"datetime'.+'"$/, `PUT: no ETag; ${seen(put)}`);

  const merge = await pageFetch(app, entityURL('from-page'), {
    method: 'MERGE', headers: { ...WRITE_HEADERS, 'If-Match': etag },
    body: JSON.stringify({ Merged: 'with If-Match' }),
  });
  assert.equal(merge.error, undefined, 'MERGE: fetch failed (preflight refused?)');
  assert.equal(merge.status, 204, merge.text);
  assert.ok(merge.headers.etag && merge.headers.etag !== etag, `MERGE: ETag ${merge.headers.etag}, want a new one; ${seen(merge)}`);

  // The ETag read first is stale now: the service refuses, and the page
  // reads why from x-ms-error-code, as a client's error handling does.
  const stale = await pageFetch(app, entityURL('from-page'), {
    method: 'MERGE', headers: { ...WRITE_HEADERS, 'If-Match': etag },
    body: JSON.stringify({ Merged: 'twice' }),
  });
  assert.equal(stale.error, undefined, 'stale MERGE: fetch failed');
  assert.equal(stale.status, 412, stale.text);
  assert.equal(stale.headers['x-ms-error-code'], 'UpdateConditionNotSatisfied', `stale MERGE: x-ms-error-code; ${seen(stale)}`);

  const scratch = await pageFetch(app, entityURL('scratch'), {
    method: 'PUT', headers: WRITE_HEADERS, body: JSON.stringify({ Scratch: true }),
  });
  assert.equal(scratch.status, 204, scratch.error ?? scratch.text);
  assert.ok(scratch.headers.etag, `scratch PUT: no ETag; ${seen(scratch)}`);
  const del = await pageFetch(app, entityURL('scratch'), {
    method: 'DELETE', headers: { ...WRITE_HEADERS, 'If-Match': scratch.headers.etag },
  });
  assert.equal(del.error, undefined, 'DELETE: fetch failed (preflight refused?)');
  assert.equal(del.status, 204, del.text);
  assert.ok(put.headers['x-ms-request-id'], `PUT: no x-ms-request-id; ${seen(put)}`);
});

// A rule exposing "*": the browser takes "*" there for a wildcard only for
// requests without credentials, so partita must name the headers for a
// page that sends them (fetch's credentials: 'include', as a client with
// withCredentials does).
test('under a rule exposing "*", a page that sends credentials reads the continuation and the ETag', { skip }, async () => {
  const put = await pageFetch(cookieApp, entityURL('with-credentials'), {
    method: 'PUT', credentials: 'include', headers: WRITE_HEADERS,
    body: JSON.stringify({ Written: 'with credentials' }),
  });
  assert.equal(put.error, undefined, 'PUT: fetch failed (preflight refused?)');
  assert.equal(put.status, 204, put.text);
  assert.match(put.headers.etag ?? '', /^W\/"datetime'.+'"$/, `PUT: no ETag; ${seen(put)}`);
  const { keys, pages } = await readAll(cookieApp, { credentials: 'include' });
  assert.equal(keys.length, COUNT,
    `read ${keys.length} of ${COUNT} entities in ${pages.length} page(s): ${keys}; on the last, ${seen(pages.at(-1))}`);
});

test('a page on an origin the rules do not name can neither read nor write', { skip }, async () => {
  const read = await pageFetch(stranger, `${BASE}()?${SAS}&$top=2`, {
    headers: { Accept: 'application/json;odata=nometadata' },
  });
  assert.match(read.error ?? '', /TypeError/, `the stranger's query was not blocked: status ${read.status}`);
  const write = await pageFetch(stranger, entityURL('stranger'), {
    method: 'PUT', headers: WRITE_HEADERS,
    body: JSON.stringify({ PartitionKey: 'p9', RowKey: 'stranger' }),
  });
  assert.match(write.error ?? '', /TypeError/, `the stranger's write was not blocked: status ${write.status}`);
  // Blocked by CORS, not by a network failure: Chromium says so on the
  // page's console. (TestBrowserCORS checks that the write never landed.)
  // Its console messages reach this process a moment later.
  for (let i = 0; i < 50 && !strangerConsole.some((m) => /blocked by CORS policy/.test(m)); i++) {
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.ok(strangerConsole.some((m) => /blocked by CORS policy/.test(m)),
    `no CORS message on the stranger's console: ${strangerConsole.join(' | ')}`);
});
