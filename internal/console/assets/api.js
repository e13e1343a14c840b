// The console's client of the Table REST API: it signs each request in the
// browser (SharedKey with WebCrypto HMAC-SHA256) or appends a SAS token.
// The account key never leaves this tab.

const enc = new TextEncoder();

export function b64(bytes) {
  let s = '';
  for (const c of new Uint8Array(bytes)) s += String.fromCharCode(c);
  return btoa(s);
}

export function unb64(text) {
  const s = atob(text);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

// hmac returns base64(HMAC-SHA256(base64-decoded key, text)).
export async function hmac(keyB64, text) {
  const key = await crypto.subtle.importKey('raw', unb64(keyB64), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  return b64(await crypto.subtle.sign('HMAC', key, enc.encode(text)));
}

// ApiError carries the service's status, error code and message.
export class ApiError extends Error {
  constructor(status, code, message) {
    super(`${status} ${code}: ${message}`);
    this.status = status;
    this.code = code;
  }
}

// Session is one signed-in connection: an endpoint (the service root, e.g.
// http://host/devstoreaccount1), an account, and a key or a SAS token.
export class Session {
  constructor({ endpoint, account, key, sas }) {
    this.endpoint = endpoint.replace(/\/+$/, '');
    this.account = account;
    this.key = key || '';
    this.sas = (sas || '').replace(/^\?/, '');
    this.basePath = new URL(this.endpoint).pathname.replace(/\/+$/, '');
  }

  get mode() { return this.key ? 'key' : 'sas'; }

  // request sends method to path (escaped, below the endpoint, starting with
  // '/') with query parameters and an optional body; it returns the Response
  // or throws ApiError with the service's code and message.
  async request(method, path, { query = {}, body, contentType, headers = {}, accept = 'application/json;odata=fullmetadata' } = {}) {
    const qs = Object.entries(query).filter(([, v]) => v !== undefined && v !== null && v !== '')
      .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`);
    if (this.sas) qs.push(this.sas);
    const url = this.endpoint + path + (qs.length ? '?' + qs.join('&') : '');
    const h = {
      'x-ms-version': '2019-02-02',
      'DataServiceVersion': '3.0',
      'MaxDataServiceVersion': '3.0;NetFx',
      'Accept': accept,
      ...headers,
    };
    if (body !== undefined) h['Content-Type'] = contentType || 'application/json';
    if (this.key) {
      const date = new Date().toUTCString();
      h['x-ms-date'] = date;
      let resource = `/${this.account}${this.basePath}${path}`;
      if (query.comp) resource += `?comp=${query.comp}`;
      const toSign = [method, '', body !== undefined ? h['Content-Type'] : '', date, resource].join('\n');
      h['Authorization'] = `SharedKey ${this.account}:${await hmac(this.key, toSign)}`;
    }
    const res = await fetch(url, { method, headers: h, body, cache: 'no-store', credentials: 'omit' });
    if (!res.ok) throw await apiError(res);
    return res;
  }

  async json(method, path, opts) {
    const res = await this.request(method, path, opts);
    const text = await res.text();
    return { res, data: text ? parseTyped(text) : null };
  }
}

async function apiError(res) {
  const text = await res.text();
  let code = res.statusText || 'Error';
  let message = text;
  try {
    const e = JSON.parse(text)['odata.error'];
    code = e.code;
    message = e.message.value;
  } catch {
    // Service errors are <Error><Code>…; the Table service's own are
    // <m:error><m:code>….
    const c = /<(?:m:)?[Cc]ode>([^<]*)<\/(?:m:)?[Cc]ode>/.exec(text);
    const m = /<(?:m:)?[Mm]essage[^>]*>([^<]*)<\/(?:m:)?[Mm]essage>/.exec(text);
    if (c) code = c[1];
    if (m) message = m[1];
  }
  return new ApiError(res.status, code, (message || '').split('\n')[0]);
}

// JSON_SOURCE: JSON.parse gives a reviver each value's source text (Chrome
// 114, Firefox 135 and later).
const JSON_SOURCE = (() => {
  let ok = false;
  try {
    JSON.parse('1.0', (k, v, ctx) => { ok = !!ctx && ctx.source === '1.0'; return v; });
  } catch { /* no source text */ }
  return ok;
})();

// numberTexts returns the text of each number of a JSON document, in order.
export function numberTexts(text) {
  const out = [];
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      for (i++; i < text.length && text[i] !== '"'; i++) if (text[i] === '\\') i++;
    } else if (c === '-' || (c >= '0' && c <= '9')) {
      let j = i + 1;
      while (j < text.length && /[0-9eE.+-]/.test(text[j])) j++;
      out.push(text.slice(i, j));
      i = j - 1;
    }
  }
  return out;
}

// parseTyped parses a JSON response, remembering which numbers were
// written as doubles (5.0), which JSON.parse alone would lose: such numbers
// come back as {double: n}. Without the reviver's source text, the numbers'
// texts are read from the document: the reviver meets number values in the
// document's order (entities have no integer-like member names, which
// objects would put first).
export function parseTyped(text, withSource = JSON_SOURCE) {
  if (withSource) {
    return JSON.parse(text, function (key, value, ctx) {
      if (typeof value === 'number' && ctx && typeof ctx.source === 'string' && /[.eE]/.test(ctx.source)) {
        return { double: value };
      }
      return value;
    });
  }
  const nums = numberTexts(text);
  let n = 0;
  return JSON.parse(text, function (key, value) {
    if (typeof value === 'number' && /[.eE]/.test(nums[n++] || '')) return { double: value };
    return value;
  });
}

export const TYPES = ['Edm.String', 'Edm.Int32', 'Edm.Int64', 'Edm.Double', 'Edm.Boolean', 'Edm.DateTime', 'Edm.Guid', 'Edm.Binary'];

// entityProps turns a service entity into [{name, type, value}] with each
// value as text, in the order the service sent them, without the keys,
// Timestamp and odata annotations.
export function entityProps(e) {
  const out = [];
  for (const [k, v] of Object.entries(e)) {
    if (k.includes('@odata.') || k.startsWith('odata.') || k === 'PartitionKey' || k === 'RowKey' || k === 'Timestamp') continue;
    let type = e[k + '@odata.type'];
    let text;
    if (v && typeof v === 'object' && 'double' in v) {
      type = type || 'Edm.Double';
      text = String(v.double);
    } else if (typeof v === 'number') {
      type = type || (Number.isInteger(v) && v >= -(2 ** 31) && v < 2 ** 31 ? 'Edm.Int32' : 'Edm.Double');
      text = String(v);
    } else if (typeof v === 'boolean') {
      type = type || 'Edm.Boolean';
      text = String(v);
    } else {
      type = type || 'Edm.String';
      text = v === null ? '' : String(v);
    }
    out.push({ name: k, type, value: text });
  }
  return out;
}

// encodeProps builds the JSON body members of typed text properties,
// checking each value against its type. The members are kept in an object
// without a prototype, and a name is looked up among its own members only:
// a property may be named constructor, toString or __proto__ (a plain {}
// answers `in` for those, and would swallow __proto__ rather than keep it).
// A name the body's keys or annotations would read differently (a system
// property, or a name like an annotation) is refused, as recordBody does.
export function encodeProps(props) {
  const body = Object.create(null);
  for (const { name, type, value } of props) {
    if (!name) throw new Error('a property needs a name');
    if (['PartitionKey', 'RowKey', 'Timestamp'].includes(name)) throw new Error(`property ${name} is a system property`);
    if (annotationLike(name)) throw new Error(`property ${name}: a name with '@' or starting with "odata." would be read as an annotation`);
    if (Object.hasOwn(body, name)) throw new Error(`property ${name} is named twice`);
    let v = value;
    switch (type) {
      case 'Edm.String': break;
      case 'Edm.Int32':
        if (!/^-?\d+$/.test(value.trim()) || Number(value) < -(2 ** 31) || Number(value) >= 2 ** 31) throw new Error(`${name}: not an Int32`);
        v = Number(value);
        break;
      case 'Edm.Int64':
        if (!/^-?\d+$/.test(value.trim())) throw new Error(`${name}: not an Int64`);
        v = value.trim();
        break;
      case 'Edm.Double':
        if (['NaN', 'Infinity', '-Infinity'].includes(value.trim())) { v = value.trim(); break; }
        if (value.trim() === '' || isNaN(Number(value))) throw new Error(`${name}: not a Double`);
        v = Number(value);
        break;
      case 'Edm.Boolean':
        if (!/^(true|false)$/i.test(value.trim())) throw new Error(`${name}: Boolean is true or false`);
        v = value.trim().toLowerCase() === 'true';
        break;
      case 'Edm.DateTime': {
        const d = new Date(value.trim());
        if (isNaN(d)) throw new Error(`${name}: not a DateTime`);
        // Keep the text as typed when it is already ISO 8601 (7 fractional
        // digits survive), else normalize.
        v = /^\d{4}-\d\d-\d\dT[\d:.]+Z$/.test(value.trim()) ? value.trim() : d.toISOString();
        break;
      }
      case 'Edm.Guid':
        if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value.trim())) throw new Error(`${name}: not a Guid`);
        v = value.trim();
        break;
      case 'Edm.Binary':
        try { atob(value.trim()); } catch { throw new Error(`${name}: Binary is base64`); }
        v = value.trim();
        break;
      default:
        throw new Error(`${name}: unknown type ${type}`);
    }
    body[name] = v;
    if (type !== 'Edm.String' && type !== 'Edm.Boolean' && type !== 'Edm.Int32') body[name + '@odata.type'] = type;
  }
  return body;
}

// keyPath is the escaped path of one entity.
export function keyPath(table, pk, rk) {
  const q = (s) => encodeURIComponent(s.replaceAll("'", "''"));
  return `/${encodeURIComponent(table)}(PartitionKey='${q(pk)}',RowKey='${q(rk)}')`;
}

// SAS generation (the string to sign as the service checks it).
export const SAS_VERSION = '2019-02-02';

export async function tableSAS(key, account, f) {
  const toSign = [f.sp, f.st, f.se, `/table/${account}/${f.tn.toLowerCase()}`, f.si, f.sip, f.spr, SAS_VERSION,
    f.spk, f.srk, f.epk, f.erk].join('\n');
  const sig = await hmac(key, toSign);
  return sasQuery([['sv', SAS_VERSION], ['tn', f.tn], ['sp', f.sp], ['st', f.st], ['se', f.se], ['si', f.si],
    ['sip', f.sip], ['spr', f.spr], ['spk', f.spk], ['srk', f.srk], ['epk', f.epk], ['erk', f.erk], ['sig', sig]]);
}

export async function accountSAS(key, account, f) {
  const toSign = [account, f.sp, 't', f.srt, f.st, f.se, f.sip, f.spr, SAS_VERSION, ''].join('\n');
  const sig = await hmac(key, toSign);
  return sasQuery([['sv', SAS_VERSION], ['ss', 't'], ['srt', f.srt], ['sp', f.sp], ['st', f.st], ['se', f.se],
    ['sip', f.sip], ['spr', f.spr], ['sig', sig]]);
}

function sasQuery(pairs) {
  return pairs.filter(([, v]) => v).map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('&');
}

// ---- partita copy's JSONL records (docs/COPY.md) ----
//
// One entity per line: {"table":…,"PartitionKey":…,"RowKey":…,"props":[[name,
// type, text],…]}, every value as text in one canonical form per type, no
// Timestamp. A download is byte for byte what `partita copy` writes for the
// same entities.

// jsonString writes s as a JSON string the way partita's encoder does
// (internal/wire): only '"', '\' and control characters are escaped, \n \r
// \t by name and the others as \u00xx.
export function jsonString(s) {
  return '"' + s.replace(/["\\\u0000-\u001f]/g, (c) => {
    switch (c) {
      case '"': return '\\"';
      case '\\': return '\\\\';
      case '\n': return '\\n';
      case '\r': return '\\r';
      case '\t': return '\\t';
    }
    return '\\u00' + c.charCodeAt(0).toString(16).padStart(2, '0');
  }) + '"';
}

// formatDouble is the canonical text of a double: the shortest digits that
// read back as the same value, always with a '.' or an exponent, exponent
// form below 1E-04 and from 1E+15 up (two exponent digits at least), or
// NaN, Infinity, -Infinity.
export function formatDouble(f) {
  if (Number.isNaN(f)) return 'NaN';
  if (f === Infinity) return 'Infinity';
  if (f === -Infinity) return '-Infinity';
  if (f === 0) return Object.is(f, -0) ? '-0.0' : '0.0';
  const a = Math.abs(f);
  // toExponential without an argument gives the shortest round-trip digits.
  const [m, e] = a.toExponential().split('e');
  const digits = m.replace('.', '');
  const exp = Number(e);
  let s;
  if (a < 1e-4 || a >= 1e15) {
    s = digits[0] + (digits.length > 1 ? '.' + digits.slice(1) : '') + 'E' + (exp < 0 ? '-' : '+') + String(Math.abs(exp)).padStart(2, '0');
  } else if (exp >= 0) {
    s = digits.length > exp + 1 ? digits.slice(0, exp + 1) + '.' + digits.slice(exp + 1) : digits + '0'.repeat(exp + 1 - digits.length) + '.0';
  } else {
    s = '0.' + '0'.repeat(-exp - 1) + digits;
  }
  return (f < 0 ? '-' : '') + s;
}

const INT_TEXT = /^(0|-?[1-9]\d*)$/;
const DATETIME7 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{7}Z$/;
const GUID_TEXT = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const BASE64_TEXT = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

// canonicalValue gives the [type, text] of one property of a service entity
// (parsed with parseTyped), from its annotation and its JSON value.
function canonicalValue(name, type, v) {
  if (v && typeof v === 'object' && 'double' in v) return ['Edm.Double', formatDouble(v.double)];
  if (typeof v === 'number') {
    if (type === 'Edm.Double' || !Number.isInteger(v) || v < -(2 ** 31) || v >= 2 ** 31) return ['Edm.Double', formatDouble(v)];
    return ['Edm.Int32', String(v)];
  }
  if (typeof v === 'boolean') return ['Edm.Boolean', String(v)];
  if (typeof v !== 'string') throw new Error(`property ${name}: unexpected value ${JSON.stringify(v)}`);
  switch (type || 'Edm.String') {
    case 'Edm.String': return ['Edm.String', v];
    case 'Edm.Binary': return ['Edm.Binary', v];
    case 'Edm.Guid': return ['Edm.Guid', v.toLowerCase()];
    case 'Edm.Int32': return ['Edm.Int32', String(Number(v))];
    case 'Edm.Int64': return ['Edm.Int64', BigInt(v).toString()];
    case 'Edm.Double':
      return ['Edm.Double', ['NaN', 'Infinity', '-Infinity'].includes(v) ? v : formatDouble(Number(v))];
    case 'Edm.DateTime': {
      const m = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,7}))?Z$/.exec(v);
      if (!m) throw new Error(`property ${name}: unexpected DateTime ${v}`);
      return ['Edm.DateTime', `${m[1]}.${(m[2] || '').padEnd(7, '0')}Z`];
    }
  }
  throw new Error(`property ${name}: unknown type ${type}`);
}

// copyRecord is the JSONL line (with its \n) of a service entity in table.
export function copyRecord(table, e) {
  const props = [];
  for (const [k, v] of Object.entries(e)) {
    if (k.includes('@odata.') || k.startsWith('odata.') || k === 'PartitionKey' || k === 'RowKey' || k === 'Timestamp') continue;
    const [type, text] = canonicalValue(k, e[k + '@odata.type'], v);
    props.push(`[${jsonString(k)},"${type}",${jsonString(text)}]`);
  }
  return `{"table":${jsonString(table)},"PartitionKey":${jsonString(e.PartitionKey)},"RowKey":${jsonString(e.RowKey)},"props":[${props.join(',')}]}\n`;
}

// isCopyRecord tells a COPY.md record from a line of the service's JSON.
export function isCopyRecord(o) {
  return o !== null && typeof o === 'object' && !Array.isArray(o) && ('table' in o || 'props' in o);
}

// annotationLike tells a property name that would read as an OData
// annotation in an entity's JSON ("A@odata.type" types property A;
// "odata.etag" is the entity's), as partita copy's reader does
// (internal/transfer): no property can carry one, and writing it would
// silently change the entity.
export function annotationLike(name) {
  return name.includes('@') || name.startsWith('odata.');
}

// recordBody checks a parsed COPY.md record as `partita copy` reads it
// (only the canonical forms) and returns its table, keys and the JSON body
// of an insert-or-replace, every property annotated but String, Int32 and
// Boolean. It throws the reason a record is refused.
export function recordBody(o) {
  for (const k of Object.keys(o)) {
    if (!['table', 'PartitionKey', 'RowKey', 'props'].includes(k)) throw new Error(`unknown member "${k}"`);
  }
  if (typeof o.table !== 'string' || o.table === '') throw new Error('missing "table"');
  if (typeof o.PartitionKey !== 'string') throw new Error('missing "PartitionKey"');
  if (typeof o.RowKey !== 'string') throw new Error('missing "RowKey"');
  const props = o.props === undefined || o.props === null ? [] : o.props;
  if (!Array.isArray(props)) throw new Error('"props" is not a list');
  let body = `{"PartitionKey":${jsonString(o.PartitionKey)},"RowKey":${jsonString(o.RowKey)}`;
  const seen = new Set();
  for (const [i, p] of props.entries()) {
    if (!Array.isArray(p) || p.length !== 3 || p.some((x) => typeof x !== 'string')) throw new Error(`property ${i} is not [name, type, value]`);
    const [name, type, s] = p;
    if (name === '') throw new Error(`property ${i} has an empty name`);
    if (['PartitionKey', 'RowKey', 'Timestamp'].includes(name)) throw new Error(`property "${name}" is a system property`);
    if (annotationLike(name)) throw new Error(`property "${name}": a name with '@' or starting with "odata." would reach the destination as an annotation`);
    if (seen.has(name)) throw new Error(`property "${name}" appears twice`);
    seen.add(name);
    const bad = () => new Error(`property "${name}": "${s}" is not a canonical ${type}`);
    let json = jsonString(s);
    switch (type) {
      case 'Edm.String': break;
      case 'Edm.Int32':
        if (!INT_TEXT.test(s) || Math.abs(Number(s)) > 2 ** 31 || Number(s) === 2 ** 31) throw bad();
        json = s;
        break;
      case 'Edm.Int64':
        if (!INT_TEXT.test(s) || BigInt(s) >= 2n ** 63n || BigInt(s) < -(2n ** 63n)) throw bad();
        break;
      case 'Edm.Boolean':
        if (s !== 'true' && s !== 'false') throw bad();
        json = s;
        break;
      case 'Edm.Double':
        if (!['NaN', 'Infinity', '-Infinity'].includes(s) && (s.trim() !== s || formatDouble(Number(s)) !== s)) throw bad();
        break;
      case 'Edm.DateTime':
        if (!DATETIME7.test(s) || isNaN(Date.parse(s.slice(0, 23) + 'Z'))) throw bad();
        break;
      case 'Edm.Guid':
        if (!GUID_TEXT.test(s)) throw bad();
        break;
      case 'Edm.Binary':
        // Strict, as partita copy reads it: the unused bits are zero.
        if (!BASE64_TEXT.test(s) || btoa(atob(s)) !== s) throw bad();
        break;
      default:
        throw new Error(`property "${name}": unknown type "${type}"`);
    }
    if (type !== 'Edm.String' && type !== 'Edm.Int32' && type !== 'Edm.Boolean') body += `,${jsonString(name + '@odata.type')}:"${type}"`;
    body += `,${jsonString(name)}:${json}`;
  }
  return { table: o.table, pk: o.PartitionKey, rk: o.RowKey, body: body + '}' };
}

// uploadLine reads one line of an uploaded JSONL file into the selected
// table: a record of `partita copy` (docs/COPY.md), which must name that
// table, or an entity in the service's JSON form (with @odata.type
// annotations). It returns the keys and the insert-or-replace body, or
// throws the reason the line is malformed.
export function uploadLine(line, table) {
  let o;
  try { o = JSON.parse(line); } catch (err) { throw new Error(`not JSON: ${err.message}`); }
  if (o === null || typeof o !== 'object' || Array.isArray(o)) throw new Error('not a JSON object');
  if (isCopyRecord(o)) {
    const r = recordBody(o);
    if (r.table !== table) throw new Error(`a record of table ${r.table}, not of the selected table ${table}`);
    return { pk: r.pk, rk: r.rk, body: r.body };
  }
  if (typeof o.PartitionKey !== 'string' || typeof o.RowKey !== 'string') throw new Error('PartitionKey and RowKey are needed');
  // The line itself is the body: the service ignores its odata.* members and
  // Timestamp, and JSON.stringify of what JSON.parse read would retype
  // values (5.0 as the Int32 5, integers past 2^53 rounded) and a deletion
  // by prefix would drop properties such as TimestampUtc.
  return { pk: o.PartitionKey, rk: o.RowKey, body: line };
}

// uploadLines writes the lines of a JSONL file into table with
// put(pk, rk, body), one at a time, as `partita copy --on-refused skip`
// reads a file: a malformed line stops the upload there (the lines before
// it are written, nothing of it or after: malformed is its reason and
// 1-based line number), and an entity the service refuses (put throws) is
// counted with its reason and the upload goes on. progress(done) is called
// after each write. It returns {done, refused: [{line, reason}], malformed}.
export async function uploadLines(lines, table, put, progress = () => {}) {
  let done = 0;
  const refused = [];
  for (const [i, raw] of lines.entries()) {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (!line.trim()) continue;
    let r;
    try { r = uploadLine(line, table); } catch (err) {
      return { done, refused, malformed: { line: i + 1, reason: err.message } };
    }
    try {
      await put(r.pk, r.rk, r.body);
      done++;
      progress(done);
    } catch (err) {
      refused.push({ line: i + 1, reason: err.message });
    }
  }
  return { done, refused, malformed: null };
}
