// partita console: the page's behaviour. Everything it shows comes from
// the public Table API, signed in this tab (api.js).
import { Session, ApiError, TYPES, entityProps, encodeProps, keyPath, tableSAS, accountSAS, copyRecord, uploadLines } from './api.js';

const $ = (id) => document.getElementById(id);
const STORE = 'partita-console-session';
let session = null;

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'on') for (const [ev, fn] of Object.entries(v)) e.addEventListener(ev, fn);
    else if (k === 'text') e.textContent = v;
    else if (v !== undefined && v !== null && v !== false) e.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children) e.append(c);
  return e;
}

function status(text, bad = false) {
  $('status').textContent = text;
  $('status').classList.toggle('error', bad);
}

function fail(err, where = null) {
  const msg = err instanceof ApiError ? err.message : String(err.message || err);
  if (where) where.textContent = msg; else status(msg, true);
}

// ---- sign in ----

// Browsers compute HMACs (WebCrypto) only on secure pages.
const NO_CRYPTO = 'This browser signs requests only on pages served over HTTPS or from localhost/127.0.0.1: '
  + 'open the console over HTTPS (partita serve --cert/--key) or on a loopback address, or sign in with a SAS.';

function defaultEndpoint(account) {
  const h = location.hostname;
  const hostStyle = h.includes('.') && !/^[\d.]+$/.test(h) && !h.startsWith('[');
  return hostStyle ? location.origin : `${location.origin}/${account}`;
}

function setMode() {
  const sas = $('signin-mode-sas').checked;
  $('signin-key-row').hidden = sas;
  $('signin-sas-row').hidden = !sas;
}

async function signIn(ev) {
  ev.preventDefault();
  $('signin-error').textContent = '';
  const account = $('signin-account').value.trim();
  let endpoint = $('signin-endpoint').value.trim();
  let key = '', sas = '';
  if ($('signin-mode-key').checked) {
    key = $('signin-key').value.trim();
    if (!key) { $('signin-error').textContent = 'Enter the account key.'; return; }
    if (!crypto.subtle) { $('signin-error').textContent = NO_CRYPTO; return; }
  } else {
    sas = $('signin-sas').value.trim();
    const q = sas.indexOf('?');
    if (/^https?:\/\//.test(sas) && q > 0) {
      sas = sas.slice(q + 1);
    }
    if (!/(^|&)sig=/.test(sas)) { $('signin-error').textContent = 'The SAS token has no sig parameter.'; return; }
  }
  const s = new Session({ endpoint, account, key, sas });
  try {
    await probe(s);
  } catch (err) {
    fail(err, $('signin-error'));
    return;
  }
  sessionStorage.setItem(STORE, JSON.stringify({ endpoint, account, key, sas }));
  start(s);
}

// probe checks the credential with the cheapest request it allows: list
// tables (key or account SAS), else one entity of the SAS's table.
async function probe(s) {
  if (s.mode === 'key' || /(^|&)srt=/.test(s.sas)) {
    await s.json('GET', '/Tables', { query: { $top: 1 } });
    return;
  }
  const tn = new URLSearchParams(s.sas).get('tn');
  if (!tn) throw new Error('A table SAS must name its table (tn).');
  await s.json('GET', `/${encodeURIComponent(tn)}()`, { query: { $top: 1 } });
}

function start(s) {
  session = s;
  $('signin').hidden = true;
  $('app').hidden = false;
  $('whoami').hidden = false;
  $('whoami-text').textContent = `${s.account} · ${s.mode === 'key' ? 'account key' : 'SAS'} · ${s.endpoint}`;
  $('sas-needs-key').hidden = s.mode === 'key';
  $('sas-generate').disabled = s.mode !== 'key' || !crypto.subtle;
  const tn = s.sas ? new URLSearchParams(s.sas).get('tn') : null;
  if (tn) {
    $('q-table').value = tn;
    showTab('entities');
    runQuery();
  } else {
    showTab('tables');
    loadTables();
  }
}

function signOut() {
  sessionStorage.removeItem(STORE);
  session = null;
  location.reload();
}

// ---- tabs ----

function showTab(name) {
  for (const b of document.querySelectorAll('#tabs button')) b.classList.toggle('active', b.dataset.tab === name);
  for (const p of document.querySelectorAll('main > section')) p.hidden = p.id !== 'tab-' + name;
  status('');
}

// ---- tables ----

let tablesNext = null;

async function loadTables(more = false) {
  try {
    const query = { $top: 100 };
    if (more && tablesNext) query.NextTableName = tablesNext;
    const { res, data } = await session.json('GET', '/Tables', { query });
    tablesNext = res.headers.get('x-ms-continuation-NextTableName');
    const body = $('tables-grid').tBodies[0];
    if (!more) body.replaceChildren();
    for (const t of data.value) {
      const name = t.TableName;
      body.append(el('tr', { 'data-table': name },
        el('td', {}, el('a', { href: '#', text: name, on: { click: (e) => { e.preventDefault(); openTable(name); } } })),
        el('td', {},
          el('button', { type: 'button', class: 'danger', 'data-delete-table': name, text: 'Delete', on: { click: () => deleteTable(name) } }))));
    }
    $('tables-more').hidden = !tablesNext;
    status(`${body.rows.length} table(s)`);
  } catch (err) { fail(err); }
}

async function createTable(ev) {
  ev.preventDefault();
  const name = $('new-table').value.trim();
  try {
    await session.json('POST', '/Tables', { body: JSON.stringify({ TableName: name }), headers: { Prefer: 'return-no-content' } });
    $('new-table').value = '';
    await loadTables();
    status(`Created table ${name}`);
  } catch (err) { fail(err); }
}

async function deleteTable(name) {
  if (!confirm(`Delete table ${name} and all its entities?`)) return;
  try {
    await session.request('DELETE', `/Tables('${encodeURIComponent(name)}')`);
    await loadTables();
    status(`Deleted table ${name}`);
  } catch (err) { fail(err); }
}

function openTable(name) {
  $('q-table').value = name;
  $('q-filter').value = '';
  $('q-select').value = '';
  showTab('entities');
  runQuery();
}

// ---- entities ----

// The current query: its parameters, the continuation of each page seen
// (so "first page" and "next page" need no offsets), and the rows shown.
let cur = { table: '', query: {}, next: null, page: 0, rows: [] };

function queryParams() {
  const q = {};
  const f = $('q-filter').value.trim();
  const s = $('q-select').value.trim();
  const t = $('q-top').value.trim();
  if (f) q.$filter = f;
  if (s) q.$select = s;
  if (t) q.$top = t;
  return q;
}

async function runQuery(ev) {
  if (ev) ev.preventDefault();
  cur = { table: $('q-table').value.trim(), query: queryParams(), next: null, page: 0, rows: [] };
  await loadPage(null);
}

async function loadPage(token) {
  const q = { ...cur.query };
  if (token) { q.NextPartitionKey = token.pk; if (token.rk) q.NextRowKey = token.rk; }
  $('entities-table-name').textContent = cur.table;
  try {
    const { res, data } = await session.json('GET', `/${encodeURIComponent(cur.table)}()`, { query: q });
    const pk = res.headers.get('x-ms-continuation-NextPartitionKey');
    cur.next = pk ? { pk, rk: res.headers.get('x-ms-continuation-NextRowKey') } : null;
    cur.page = token ? cur.page + 1 : 1;
    cur.rows = data.value;
    $('query-class').textContent = res.headers.get('x-partita-query-class') || 'n/a';
    $('query-examined').textContent = res.headers.get('x-partita-entities-examined') ?? 'n/a';
    $('query-returned').textContent = String(data.value.length);
    $('query-page').textContent = String(cur.page);
    $('q-next').disabled = !cur.next;
    $('q-first').disabled = cur.page <= 1;
    renderGrid(data.value);
    status(cur.next ? 'More entities follow: Next page continues.' : '');
  } catch (err) {
    renderGrid([]);
    fail(err);
  }
}

function renderGrid(rows) {
  // Columns: the keys, then every property of the page with its type.
  const cols = new Map();
  const parsed = rows.map((e) => {
    const props = entityProps(e);
    for (const p of props) if (!cols.has(p.name)) cols.set(p.name, p.type);
    return { e, props: new Map(props.map((p) => [p.name, p])) };
  });
  const head = el('tr', {}, el('th', {}, ''), el('th', { text: 'PartitionKey' }), el('th', { text: 'RowKey' }), el('th', { text: 'Timestamp' }));
  for (const [name, type] of cols) head.append(el('th', { 'data-col': name }, name, el('span', { class: 'type', text: type.replace('Edm.', '') })));
  $('entities-grid').tHead.replaceChildren(head);
  const body = $('entities-grid').tBodies[0];
  body.replaceChildren();
  for (const { e, props } of parsed) {
    const tr = el('tr', { 'data-pk': e.PartitionKey, 'data-rk': e.RowKey },
      el('td', {},
        el('button', { type: 'button', 'data-action': 'edit', text: 'Edit', on: { click: () => openEditor(e) } }), ' ',
        el('button', { type: 'button', class: 'danger', 'data-action': 'delete', text: 'Delete', on: { click: () => deleteEntity(e) } })),
      el('td', { text: e.PartitionKey ?? '' }), el('td', { text: e.RowKey ?? '' }), el('td', { text: e.Timestamp ?? '' }));
    for (const [name, type] of cols) {
      const p = props.get(name);
      tr.append(el('td', { 'data-col': name, title: p ? p.type : '', text: p ? p.value : '' }));
      if (p && p.type !== type) tr.lastChild.classList.add('othertype');
    }
    body.append(tr);
  }
}

async function deleteEntity(e) {
  if (!confirm(`Delete entity (${e.PartitionKey}, ${e.RowKey})?`)) return;
  try {
    await session.request('DELETE', keyPath(cur.table, e.PartitionKey, e.RowKey), { headers: { 'If-Match': e['odata.etag'] || '*' } });
    await loadPage(null);
    status(`Deleted (${e.PartitionKey}, ${e.RowKey})`);
  } catch (err) { fail(err); }
}

// ---- the entity editor ----

let editing = null; // the entity being edited, null for a new one

function propRow(p = { name: '', type: 'Edm.String', value: '' }) {
  const sel = el('select', { class: 'ed-type' });
  for (const t of TYPES) sel.append(el('option', { value: t, text: t, selected: t === p.type }));
  const tr = el('tr', {},
    el('td', {}, el('input', { class: 'ed-name mono', value: p.name })),
    el('td', {}, sel),
    el('td', {}, el('input', { class: 'ed-value mono', value: p.value })),
    el('td', {}, el('button', { type: 'button', text: 'Remove', on: { click: () => tr.remove() } })));
  return tr;
}

function openEditor(e) {
  editing = e || null;
  $('editor-title').textContent = e ? `Edit (${e.PartitionKey}, ${e.RowKey})` : `New entity in ${cur.table || $('q-table').value}`;
  $('ed-pk').value = e ? e.PartitionKey : '';
  $('ed-rk').value = e ? e.RowKey : '';
  $('ed-pk').readOnly = $('ed-rk').readOnly = !!e;
  const body = $('ed-props').tBodies[0];
  body.replaceChildren();
  for (const p of e ? entityProps(e) : []) body.append(propRow(p));
  if (!e) body.append(propRow());
  $('editor-error').textContent = '';
  $('editor').hidden = false;
  $('editor').scrollIntoView({ block: 'nearest' });
}

async function saveEditor(ev) {
  ev.preventDefault();
  $('editor-error').textContent = '';
  const table = cur.table || $('q-table').value.trim();
  try {
    const props = [...$('ed-props').tBodies[0].rows].map((r) => ({
      name: r.querySelector('.ed-name').value.trim(),
      type: r.querySelector('.ed-type').value,
      value: r.querySelector('.ed-value').value,
    })).filter((p) => p.name || p.value);
    const body = { PartitionKey: $('ed-pk').value, RowKey: $('ed-rk').value, ...encodeProps(props) };
    if (editing) {
      await session.request('PUT', keyPath(table, editing.PartitionKey, editing.RowKey), {
        body: JSON.stringify(body), headers: { 'If-Match': editing['odata.etag'] || '*' },
      });
    } else {
      await session.request('POST', `/${encodeURIComponent(table)}`, { body: JSON.stringify(body), headers: { Prefer: 'return-no-content' } });
    }
    $('editor').hidden = true;
    if (!cur.table) cur = { table, query: queryParams(), next: null, page: 0, rows: [] };
    await loadPage(null);
    status(`Saved (${body.PartitionKey}, ${body.RowKey})`);
  } catch (err) { fail(err, $('editor-error')); }
}

// ---- download and upload ----

const MAX_DOWNLOAD = 200000; // entities, so a download cannot exhaust the tab

async function allResults() {
  const out = [];
  let token = null;
  do {
    const q = { ...cur.query, $top: 1000 };
    if (token) { q.NextPartitionKey = token.pk; if (token.rk) q.NextRowKey = token.rk; }
    const { res, data } = await session.json('GET', `/${encodeURIComponent(cur.table)}()`, { query: q, accept: 'application/json;odata=minimalmetadata' });
    out.push(...data.value);
    const pk = res.headers.get('x-ms-continuation-NextPartitionKey');
    token = pk ? { pk, rk: res.headers.get('x-ms-continuation-NextRowKey') } : null;
    status(`Downloading… ${out.length} entities`);
  } while (token && out.length < MAX_DOWNLOAD);
  return { rows: out, truncated: !!token };
}

function save(name, type, text) {
  const a = el('a', { href: URL.createObjectURL(new Blob([text], { type })), download: name });
  document.body.append(a);
  a.click();
  setTimeout(() => { URL.revokeObjectURL(a.href); a.remove(); }, 1000);
}

async function downloadJSONL() {
  try {
    const { rows, truncated } = await allResults();
    // partita copy's records (docs/COPY.md), one per line.
    save(`${cur.table}.jsonl`, 'application/x-ndjson', rows.map((e) => copyRecord(cur.table, e)).join(''));
    status(`Downloaded ${rows.length} entities${truncated ? ` (stopped at ${MAX_DOWNLOAD})` : ''}`);
  } catch (err) { fail(err); }
}

// csvField quotes s for CSV. A cell a spreadsheet would run as a formula
// (one that starts with =, +, -, @, a tab or a CR, and is not a plain
// number) gets a leading apostrophe, which spreadsheets show as text:
// keys and values come from any client of the table, and a formula such
// as =HYPERLINK(...) runs when the download is opened. The JSONL download
// is the one that round-trips.
function csvField(s) {
  if (/^[=+\-@\t\r]/.test(s) && !/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(s)) s = "'" + s;
  return /[",\n\r]/.test(s) ? '"' + s.replaceAll('"', '""') + '"' : s;
}

async function downloadCSV() {
  try {
    const { rows, truncated } = await allResults();
    const cols = new Map();
    const parsed = rows.map((e) => {
      const props = entityProps(e);
      for (const p of props) if (!cols.has(p.name)) cols.set(p.name, p.type);
      return { e, props: new Map(props.map((p) => [p.name, p.value])) };
    });
    // The header names each column with its type, e.g. Count@Edm.Int64.
    const lines = [['PartitionKey', 'RowKey', 'Timestamp', ...[...cols].map(([n, t]) => `${n}@${t}`)].map(csvField).join(',')];
    for (const { e, props } of parsed) {
      lines.push([e.PartitionKey, e.RowKey, e.Timestamp || '', ...[...cols.keys()].map((n) => props.get(n) ?? '')].map((v) => csvField(String(v))).join(','));
    }
    save(`${cur.table}.csv`, 'text/csv', lines.join('\r\n') + '\r\n');
    status(`Downloaded ${rows.length} entities${truncated ? ` (stopped at ${MAX_DOWNLOAD})` : ''}`);
  } catch (err) { fail(err); }
}

// MAX_UPLOAD_ERRORS bounds the refused lines the status names.
const MAX_UPLOAD_ERRORS = 10;

// uploadJSONL inserts or replaces one entity per line into the selected
// table (uploadLines): a malformed line stops the upload, as it stops
// `partita copy` (the lines before it are written, nothing of it or after);
// a line the service refuses is reported with its number and reason and
// the upload goes on, as with `partita copy --on-refused skip`.
async function uploadJSONL(ev) {
  const file = ev.target.files[0];
  ev.target.value = '';
  if (!file) return;
  const table = cur.table || $('q-table').value.trim();
  const lines = (await file.text()).split('\n');
  const total = lines.filter((l) => l.trim()).length;
  const put = (pk, rk, body) => session.request('PUT', keyPath(table, pk, rk), { body });
  const { done, refused, malformed } = await uploadLines(lines, table, put, (n) => {
    if (n % 50 === 0) status(`Uploaded ${n} of ${total}…`);
  });
  if (!cur.table) cur = { table, query: queryParams(), next: null, page: 0, rows: [] };
  try { await loadPage(null); } catch (err) { fail(err); return; }
  const parts = [`Uploaded ${done} entities`];
  if (refused.length) {
    const named = refused.slice(0, MAX_UPLOAD_ERRORS).map((r) => `line ${r.line}: ${r.reason}`);
    parts.push(`${refused.length} ${refused.length === 1 ? 'line' : 'lines'} refused: ${named.join('; ')}${refused.length > named.length ? '; …' : ''}`);
  }
  if (malformed) parts.push(`stopped at line ${malformed.line}, nothing of it or after written: ${malformed.reason}`);
  status(parts.join('; '), refused.length > 0 || malformed !== null);
}

// ---- SAS generator ----

function sasKind() { return $('sas-kind-account').checked ? 'account' : 'table'; }

function setSasKind() {
  const acct = sasKind() === 'account';
  for (const n of document.querySelectorAll('.sas-table')) n.hidden = acct;
  for (const n of document.querySelectorAll('.sas-account')) n.hidden = !acct;
}

// utc reads a datetime-local input as UTC: yyyy-mm-ddThh:mm:ssZ.
function utc(id) {
  const v = $(id).value;
  if (!v) return '';
  return (v.length === 16 ? v + ':00' : v.slice(0, 19)) + 'Z';
}

function checked(selector) {
  return [...document.querySelectorAll(selector)].filter((c) => c.checked).map((c) => c.value).join('');
}

async function generateSAS(ev) {
  ev.preventDefault();
  $('sas-error').textContent = '';
  try {
    const common = { st: utc('sas-start'), se: utc('sas-expiry'), sip: $('sas-ip').value.trim(), spr: $('sas-protocol').value };
    let token, url;
    if (sasKind() === 'table') {
      const tn = $('sas-table').value.trim();
      if (!tn) throw new Error('Name the table.');
      const si = $('sas-si').value.trim();
      const f = { ...common, tn, si, sp: checked('.sas-table input[id^=sas-p-]'),
        spk: $('sas-spk').value, srk: $('sas-srk').value, epk: $('sas-epk').value, erk: $('sas-erk').value };
      if (!si && (!f.sp || !f.se)) throw new Error('A SAS without a stored policy needs permissions and an expiry.');
      token = await tableSAS(session.key, session.account, f);
      url = `${session.endpoint}/${tn}?${token}`;
    } else {
      const f = { ...common, sp: checked('.sas-account input[id^=sas-ap-]'), srt: checked('.sas-account input[id^=sas-srt-]') };
      if (!f.sp || !f.srt || !f.se) throw new Error('An account SAS needs permissions, resource types and an expiry.');
      token = await accountSAS(session.key, session.account, f);
      url = `${session.endpoint}?${token}`;
    }
    $('sas-token').value = token;
    $('sas-url').value = url;
    $('sas-conn').value = `TableEndpoint=${session.endpoint};SharedAccessSignature=${token}`;
    $('sas-out').hidden = false;
  } catch (err) { fail(err, $('sas-error')); }
}

// ---- stored access policies ----

function aclRow(p = { id: '', start: '', expiry: '', perm: 'r' }) {
  const tr = el('tr', {},
    el('td', {}, el('input', { class: 'acl-id', value: p.id, maxlength: 64 })),
    el('td', {}, el('input', { class: 'acl-start mono', value: p.start, placeholder: '2026-01-01T00:00:00Z' })),
    el('td', {}, el('input', { class: 'acl-expiry mono', value: p.expiry, placeholder: '2027-01-01T00:00:00Z' })),
    el('td', {}, el('input', { class: 'acl-perm mono', value: p.perm, placeholder: 'raud' })),
    el('td', {}, el('button', { type: 'button', text: 'Remove', on: { click: () => tr.remove() } })));
  return tr;
}

async function loadACL(ev) {
  if (ev) ev.preventDefault();
  const table = $('acl-table').value.trim();
  try {
    const res = await session.request('GET', `/${encodeURIComponent(table)}`, { query: { comp: 'acl' }, accept: 'application/xml' });
    const doc = new DOMParser().parseFromString(await res.text(), 'application/xml');
    const body = $('acl-grid').tBodies[0];
    body.replaceChildren();
    const text = (n, tag) => n.getElementsByTagName(tag)[0]?.textContent || '';
    for (const si of doc.getElementsByTagName('SignedIdentifier')) {
      body.append(aclRow({ id: text(si, 'Id'), start: text(si, 'Start'), expiry: text(si, 'Expiry'), perm: text(si, 'Permission') }));
    }
    status(`${body.rows.length} stored access policies on ${table}`);
  } catch (err) { fail(err); }
}

function xmlEscape(s) {
  return s.replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

async function saveACL() {
  const table = $('acl-table').value.trim();
  let xml = '<?xml version="1.0" encoding="utf-8"?><SignedIdentifiers>';
  for (const r of $('acl-grid').tBodies[0].rows) {
    const v = (c) => xmlEscape(r.querySelector(c).value.trim());
    xml += `<SignedIdentifier><Id>${v('.acl-id')}</Id><AccessPolicy>`;
    if (v('.acl-start')) xml += `<Start>${v('.acl-start')}</Start>`;
    if (v('.acl-expiry')) xml += `<Expiry>${v('.acl-expiry')}</Expiry>`;
    if (v('.acl-perm')) xml += `<Permission>${v('.acl-perm')}</Permission>`;
    xml += '</AccessPolicy></SignedIdentifier>';
  }
  xml += '</SignedIdentifiers>';
  try {
    await session.request('PUT', `/${encodeURIComponent(table)}`, { query: { comp: 'acl' }, body: xml, contentType: 'application/xml', accept: 'application/xml' });
    status(`Saved the stored access policies of ${table}`);
  } catch (err) { fail(err); }
}

// ---- CORS rules ----

let serviceProps = null; // the last service properties document read

function corsRow(r = { origins: '', methods: 'GET', allowed: '', exposed: '', age: '0' }) {
  const tr = el('tr', {},
    el('td', {}, el('input', { class: 'cors-origins mono', value: r.origins })),
    el('td', {}, el('input', { class: 'cors-methods mono', value: r.methods })),
    el('td', {}, el('input', { class: 'cors-allowed mono', value: r.allowed })),
    el('td', {}, el('input', { class: 'cors-exposed mono', value: r.exposed })),
    el('td', {}, el('input', { class: 'cors-age mono', value: r.age, type: 'number', min: 0 })),
    el('td', {}, el('button', { type: 'button', text: 'Remove', on: { click: () => tr.remove() } })));
  return tr;
}

async function loadCORS() {
  try {
    const res = await session.request('GET', '/', { query: { restype: 'service', comp: 'properties' }, accept: 'application/xml' });
    serviceProps = new DOMParser().parseFromString(await res.text(), 'application/xml');
    const body = $('cors-grid').tBodies[0];
    body.replaceChildren();
    const text = (n, tag) => n.getElementsByTagName(tag)[0]?.textContent || '';
    for (const r of serviceProps.getElementsByTagName('CorsRule')) {
      body.append(corsRow({ origins: text(r, 'AllowedOrigins'), methods: text(r, 'AllowedMethods'), allowed: text(r, 'AllowedHeaders'),
        exposed: text(r, 'ExposedHeaders'), age: text(r, 'MaxAgeInSeconds') }));
    }
    status(`${body.rows.length} CORS rule(s)`);
  } catch (err) { fail(err); }
}

async function saveCORS() {
  try {
    if (!serviceProps) await loadCORS();
    // Keep logging and metrics as read; replace only the Cors element.
    const doc = serviceProps;
    const root = doc.documentElement;
    for (const c of [...root.getElementsByTagName('Cors')]) c.remove();
    const cors = doc.createElement('Cors');
    for (const r of $('cors-grid').tBodies[0].rows) {
      const rule = doc.createElement('CorsRule');
      for (const [tag, cls] of [['AllowedOrigins', 'origins'], ['AllowedMethods', 'methods'], ['AllowedHeaders', 'allowed'], ['ExposedHeaders', 'exposed'], ['MaxAgeInSeconds', 'age']]) {
        const n = doc.createElement(tag);
        n.textContent = r.querySelector('.cors-' + cls).value.trim();
        rule.append(n);
      }
      cors.append(rule);
    }
    root.append(cors);
    const xml = '<?xml version="1.0" encoding="utf-8"?>' + new XMLSerializer().serializeToString(root);
    await session.request('PUT', '/', { query: { restype: 'service', comp: 'properties' }, body: xml, contentType: 'application/xml', accept: 'application/xml' });
    status('Saved the CORS rules');
    await loadCORS();
  } catch (err) { fail(err); }
}

// ---- heat map and advisor ----

// The advisor's findings and heat map of the signed-in account, read with
// partita's own service-level operations (comp=partita-advisor and
// comp=partita-heat), signed like every other request.

const num = (n, digits = 0) => Number(n).toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

function evidenceText(k, v) {
  if (/share/i.test(k)) return `${k} ${num(v * 100, 1)}%`;
  return `${k} ${Number.isInteger(v) ? num(v) : num(v, 2)}`;
}

function renderFinding(f) {
  const head = [el('span', { class: 'kind', text: f.kind }), ` · table `, el('span', { class: 'mono', text: f.table })];
  if (f.partitionKey) head.push(' · partition ', el('span', { class: 'mono', text: f.partitionKey }));
  const ev = el('ul', { class: 'evidence' });
  for (const [k, v] of Object.entries(f.evidence || {})) ev.append(el('li', { 'data-evidence': k, text: evidenceText(k, v) }));
  return el('div', { class: 'finding', 'data-kind': f.kind, 'data-table': f.table },
    el('p', {}, ...head),
    el('p', { class: 'summary', text: f.summary }),
    ev,
    el('p', {}, el('strong', { text: 'Pattern: ' }), el('span', { class: 'pattern', text: f.pattern })),
    el('p', {}, el('strong', { text: 'Fix: ' }), el('span', { class: 'fix', text: f.fix })));
}

function renderHeatTable(t) {
  const top = Math.max(1, ...t.partitions.map((p) => p.requests));
  const body = el('tbody');
  for (const p of t.partitions) {
    body.append(el('tr', { 'data-table': t.table, 'data-pk': p.partitionKey },
      el('td', { 'data-col': 'pk', text: p.partitionKey }),
      el('td', { class: 'num', 'data-col': 'requests', text: num(p.requests) }),
      el('td', { class: 'num', 'data-col': 'rps', text: num(p.requestsPerSecond, 2) }),
      el('td', { class: 'num', 'data-col': 'writes', text: num(p.writes) }),
      el('td', { class: 'num', 'data-col': 'wps', text: num(p.writesPerSecond, 2) }),
      el('td', { class: 'num', 'data-col': 'err', text: p.maxOverstatement ? `±${num(p.maxOverstatement)}` : '' }),
      el('td', {}, el('meter', { min: 0, max: top, value: p.requests, title: `${num(p.requests)} of ${num(top)} requests` }))));
  }
  const head = el('tr', {}, el('th', { text: 'PartitionKey' }), el('th', { class: 'num', text: 'Requests' }), el('th', { class: 'num', text: 'Requests/s' }),
    el('th', { class: 'num', text: 'Writes' }), el('th', { class: 'num', text: 'Writes/s' }), el('th', { class: 'num', text: '±' }), el('th', { text: 'Share of the busiest' }));
  return el('div', { class: 'heat-table', 'data-heat-table': t.table },
    el('h4', {}, el('span', { class: 'mono', text: t.table }),
      ` — ${num(t.requests)} requests (${num(t.requestsPerSecond, 2)}/s), ${num(t.writes)} writes (${num(t.writesPerSecond, 2)}/s)`),
    el('div', { class: 'scroll' }, el('table', { class: 'grid heat-grid' }, el('thead', {}, head), body)));
}

async function loadHeat() {
  $('heat-error').textContent = '';
  $('heat-refresh').disabled = true;
  try {
    // Plain JSON (no OData typing): read it as is.
    const get = async (comp) => (await session.request('GET', '/', { query: { restype: 'service', comp }, accept: 'application/json' })).json();
    const [report, heat] = await Promise.all([get('partita-advisor'), get('partita-heat')]);
    $('heat-findings').replaceChildren(...report.findings.map(renderFinding));
    $('heat-no-findings').hidden = report.findings.length > 0;
    $('heat-tables').replaceChildren(...heat.tables.map(renderHeatTable));
    $('heat-no-tables').hidden = heat.tables.length > 0;
    $('heat-window').textContent = `Last ${num(heat.windowSeconds / 60)} minutes · read ${new Date().toLocaleTimeString()}`;
    status(`${report.findings.length} finding(s), ${heat.tables.length} busy table(s)`);
  } catch (err) {
    $('heat-findings').replaceChildren();
    $('heat-tables').replaceChildren();
    if (err instanceof ApiError && err.code === 'NotImplemented') {
      $('heat-error').textContent = 'The advisor is off on this server (partita serve --advisor=false).';
    } else {
      fail(err, $('heat-error'));
    }
  } finally {
    $('heat-refresh').disabled = false;
  }
}

// ---- wiring ----

function init() {
  $('signin-endpoint').value = defaultEndpoint($('signin-account').value);
  $('signin-account').addEventListener('input', () => { $('signin-endpoint').value = defaultEndpoint($('signin-account').value.trim()); });
  $('signin-mode-key').addEventListener('change', setMode);
  $('signin-mode-sas').addEventListener('change', setMode);
  $('signin-form').addEventListener('submit', signIn);
  $('signout').addEventListener('click', signOut);
  for (const b of document.querySelectorAll('#tabs button')) {
    b.addEventListener('click', () => {
      showTab(b.dataset.tab);
      if (b.dataset.tab === 'tables') loadTables();
      if (b.dataset.tab === 'cors') loadCORS();
      if (b.dataset.tab === 'heat') loadHeat();
      if (b.dataset.tab === 'policies' && !$('acl-table').value) $('acl-table').value = cur.table;
      if (b.dataset.tab === 'sas' && !$('sas-table').value) $('sas-table').value = cur.table;
    });
  }
  $('create-table-form').addEventListener('submit', createTable);
  $('refresh-tables').addEventListener('click', () => loadTables());
  $('tables-more').addEventListener('click', () => loadTables(true));
  $('query-form').addEventListener('submit', runQuery);
  $('q-next').addEventListener('click', () => cur.next && loadPage(cur.next));
  $('q-first').addEventListener('click', () => { cur.page = 0; loadPage(null); });
  $('new-entity').addEventListener('click', () => openEditor(null));
  $('ed-add').addEventListener('click', () => $('ed-props').tBodies[0].append(propRow()));
  $('editor').addEventListener('submit', saveEditor);
  $('ed-cancel').addEventListener('click', () => { $('editor').hidden = true; });
  $('download-jsonl').addEventListener('click', downloadJSONL);
  $('download-csv').addEventListener('click', downloadCSV);
  $('upload-jsonl').addEventListener('change', uploadJSONL);
  $('sas-kind-table').addEventListener('change', setSasKind);
  $('sas-kind-account').addEventListener('change', setSasKind);
  $('sas-form').addEventListener('submit', generateSAS);
  const exp = new Date(Date.now() + 24 * 3600e3).toISOString().slice(0, 16);
  $('sas-expiry').value = exp;
  $('acl-form').addEventListener('submit', loadACL);
  $('acl-add').addEventListener('click', () => $('acl-grid').tBodies[0].append(aclRow()));
  $('acl-save').addEventListener('click', saveACL);
  $('cors-load').addEventListener('click', loadCORS);
  $('cors-add').addEventListener('click', () => $('cors-grid').tBodies[0].append(corsRow()));
  $('cors-save').addEventListener('click', saveCORS);
  $('heat-refresh').addEventListener('click', loadHeat);

  const saved = sessionStorage.getItem(STORE);
  if (saved) {
    try { start(new Session(JSON.parse(saved))); } catch { sessionStorage.removeItem(STORE); }
  }
  document.body.dataset.ready = 'true';
}

init();
