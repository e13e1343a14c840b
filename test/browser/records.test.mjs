// The console's reading of an uploaded JSONL file (internal/console/assets/
// api.js: recordBody, uploadLine, uploadLines), with node alone: no browser
// and no server. e2e TestConsoleRecords runs this file; TestConsole runs it
// too, with the browser steps beside it.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { annotationLike, recordBody, uploadLines, parseTyped, numberTexts, entityProps, encodeProps } from '../../internal/console/assets/api.js';

const T = 'uploads';
const rec = (rk, props) => JSON.stringify({ table: T, PartitionKey: 'p', RowKey: rk, props });

// As partita copy's reader (internal/transfer annotationLike): a property
// name with '@' anywhere, or starting with "odata.", is refused with
// copy's reason; "odata" alone or later in the name is a property.
test('a record property named like an annotation is refused', () => {
  for (const name of ['A@odata.type', '@x', 'x@', 'odata.etag', 'odata.type']) {
    assert.ok(annotationLike(name), name);
    assert.throws(() => recordBody(JSON.parse(rec('1', [[name, 'Edm.String', 'v']]))), {
      message: `property "${name}": a name with '@' or starting with "odata." would reach the destination as an annotation`,
    });
  }
  for (const name of ['odata', 'odataX', 'Aodata.type', 'A.odata.', 'Odata.etag']) {
    assert.ok(!annotationLike(name), name);
    assert.equal(recordBody(JSON.parse(rec('1', [[name, 'Edm.Int64', '5']]))).body,
      `{"PartitionKey":"p","RowKey":"1",${JSON.stringify(name + '@odata.type')}:"Edm.Int64",${JSON.stringify(name)}:"5"}`);
  }
});

// A malformed line stops the upload as it stops partita copy: the lines
// before it are written, nothing of it or after; an entity the service
// refuses is reported and the upload goes on (copy --on-refused skip).
test('a malformed line stops the upload there; a refused entity does not', async () => {
  const lines = [
    rec('1', [['N', 'Edm.Int32', '1']]),
    '',
    rec('refused', []),
    rec('2', [['Ok', 'Edm.String', 'a'], ['A@odata.type', 'Edm.String', 'Edm.Int64']]),
    rec('3', []),
    'not json',
  ];
  const written = [];
  const put = async (pk, rk, body) => {
    if (rk === 'refused') throw new Error('400 PropertyValueTooLarge: too large');
    written.push([pk, rk, body]);
  };
  const progress = [];
  const r = await uploadLines(lines, T, put, (n) => progress.push(n));
  assert.deepEqual(written, [['p', '1', '{"PartitionKey":"p","RowKey":"1","N":1}']]);
  assert.equal(r.done, 1);
  assert.deepEqual(progress, [1]);
  assert.deepEqual(r.refused, [{ line: 3, reason: '400 PropertyValueTooLarge: too large' }]);
  assert.deepEqual(r.malformed, { line: 4, reason: `property "A@odata.type": a name with '@' or starting with "odata." would reach the destination as an annotation` });

  // Without the bad line, every line is read (the service's JSON form too,
  // where an annotation is an annotation), and CRLF endings are dropped.
  written.length = 0;
  const ok = [lines[0], rec('3', []) + '\r', '{"PartitionKey":"p","RowKey":"4","N@odata.type":"Edm.Int64","N":"7","odata.etag":"W/\\"x\\""}'];
  const r2 = await uploadLines(ok, T, put);
  assert.equal(r2.done, 3);
  assert.equal(r2.malformed, null);
  assert.deepEqual(written.map((w) => w[1]), ['1', '3', '4']);
  assert.equal(written[2][2], ok[2]); // the service ignores odata.etag

  // A line in the service's form is sent as it is: 5.0 stays a Double, an
  // integer past 2^53 is not rounded, and TimestampUtc is a property (the
  // line was parsed and re-serialized, without every name starting with
  // Timestamp).
  written.length = 0;
  const service = '{"PartitionKey":"p","RowKey":"sf1","D":5.0,"TimestampUtc":"keep me","Timestamps":3,"N":9007199254740993,"Timestamp":"2024-01-01T00:00:00Z"}';
  const r4 = await uploadLines([service], T, put);
  assert.equal(r4.done, 1);
  assert.deepEqual(written, [['p', 'sf1', service]]);

  // A record of another table is malformed here too.
  const r3 = await uploadLines([JSON.stringify({ table: 'other', PartitionKey: 'p', RowKey: '9', props: [] })], T, put);
  assert.deepEqual(r3.malformed, { line: 1, reason: `a record of table other, not of the selected table ${T}` });
});

// A download tells 5.0 (Double) from 5 (Int32) by the number's text: from
// the reviver's source where the browser gives it, else from the document
// (Node 20, which runs this, gives none). Strings with digits, quotes and
// backslashes must not be read as numbers.
test('doubles are told from integers without the reviver source text', () => {
  const text = '{"odata.metadata":"http://h/x#t","value":[{"PartitionKey":"p\\"1.5","RowKey":"2e3",' +
    '"D":5.0,"I":5,"E":1E+21,"N":-0.0,"M":-7,"S":"a\\\\","Big@odata.type":"Edm.Int64","Big":"9","T":true},' +
    '{"PartitionKey":"q","RowKey":"r","D":0.5}]}';
  assert.deepEqual(numberTexts(text), ['5.0', '5', '1E+21', '-0.0', '-7', '0.5']);
  const got = parseTyped(text, false);
  const e = got.value[0];
  assert.deepEqual([e.D, e.I, e.E, e.M, e.Big, e.T, e.PartitionKey, e.RowKey, e.S],
    [{ double: 5 }, 5, { double: 1e21 }, -7, '9', true, 'p"1.5', '2e3', 'a\\']);
  assert.ok(Object.is(e.N.double, -0));
  assert.deepEqual(got.value[1].D, { double: 0.5 });
});

// The entity editor (encodeProps) saves what it read: a property may be
// named constructor, toString or __proto__ (the service takes any C#
// identifier), which a plain {} took for a name given twice, or dropped
// (__proto__). A system property or a name like an annotation, which
// would replace a key or retype another property, is refused as an
// uploaded record's is.
test('the editor keeps properties named like Object.prototype members', () => {
  const e = parseTyped('{"PartitionKey":"p","RowKey":"r","__proto__":"a","constructor":"b","toString":1,"valueOf@odata.type":"Edm.Int64","valueOf":"7"}', false);
  const body = { PartitionKey: 'p', RowKey: 'r', ...encodeProps(entityProps(e)) };
  assert.equal(JSON.stringify(body),
    '{"PartitionKey":"p","RowKey":"r","__proto__":"a","constructor":"b","toString":1,"valueOf":"7","valueOf@odata.type":"Edm.Int64"}');
  assert.throws(() => encodeProps([{ name: 'constructor', type: 'Edm.String', value: 'a' }, { name: 'constructor', type: 'Edm.String', value: 'b' }]),
    { message: 'property constructor is named twice' });
  for (const name of ['PartitionKey', 'RowKey', 'Timestamp', 'A@odata.type', 'odata.etag']) {
    assert.throws(() => encodeProps([{ name, type: 'Edm.String', value: 'x' }]), name);
  }
});
