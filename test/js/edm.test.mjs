// Every EDM type through @azure/data-tables: write, read back (with and
// without type conversion), check the wire format, and query by value.
import { test } from "node:test";
import assert from "node:assert/strict";
import { collect, newTable, rawResponse, userProps } from "./helpers.mjs";

const guid = "4185404a-5818-48c3-b9be-f217df0dba6f";
const when = new Date("2021-03-04T05:06:07.089Z");
const bytes = new Uint8Array([0, 1, 2, 127, 128, 253, 254, 255]);

const entity = {
  partitionKey: "p",
  rowKey: "edm",
  Str: "héllo wörld ✓ 日本",
  EmptyStr: "",
  I32: 42,
  I32Min: -2147483648,
  I32Max: 2147483647,
  I64: { type: "Int64", value: "9007199254740993" }, // 2^53 + 1: not exact as a JS number
  I64Min: { type: "Int64", value: "-9223372036854775808" },
  I64BigInt: 1234567890123n, // the SDK annotates bigint as Edm.Int64
  Dbl: 3.25,
  DblIntegral: { type: "Double", value: 5 }, // sent as 5 with an Edm.Double annotation
  DblNeg: -0.5,
  DblHuge: 1.5e300,
  DblNaN: { type: "Double", value: "NaN" },
  DblInf: { type: "Double", value: "Infinity" },
  DblNegInf: { type: "Double", value: "-Infinity" },
  BoolT: true,
  BoolF: false,
  When: when,
  WhenPrecise: { type: "DateTime", value: "2021-03-04T05:06:07.1234567Z" },
  Id: { type: "Guid", value: guid },
  Bin: bytes,
};

function int64Text(v) {
  // 13.3+ returns BigInt; older 13.x returned {type:"Int64", value}.
  if (typeof v === "bigint") return v.toString();
  assert.equal(v?.type, "Int64", `Int64 value ${JSON.stringify(v)}`);
  return v.value;
}

test("EDM round trip", async (t) => {
  const c = await newTable(t);
  await c.createEntity(entity);
  const raw = rawResponse();
  const got = await c.getEntity("p", "edm", { onResponse: raw.cb });

  await t.test("String", () => {
    assert.equal(got.Str, entity.Str);
    assert.equal(got.EmptyStr, "");
  });
  await t.test("Int32 (number)", () => {
    assert.equal(got.I32, 42);
    assert.equal(got.I32Min, -2147483648);
    assert.equal(got.I32Max, 2147483647);
  });
  await t.test("Int64 ({type:'Int64',value} and bigint)", () => {
    assert.equal(int64Text(got.I64), "9007199254740993");
    assert.equal(int64Text(got.I64Min), "-9223372036854775808");
    assert.equal(int64Text(got.I64BigInt), "1234567890123");
  });
  await t.test("Double", () => {
    assert.equal(got.Dbl, 3.25);
    assert.equal(got.DblNeg, -0.5);
    assert.equal(got.DblHuge, 1.5e300);
    assert.equal(got.DblIntegral, 5);
  });
  await t.test("Double NaN / Infinity / -Infinity (string form with Edm.Double)", () => {
    // The SDK returns annotated Edm.Double values as they come: the strings.
    assert.equal(got.DblNaN, "NaN");
    assert.equal(got.DblInf, "Infinity");
    assert.equal(got.DblNegInf, "-Infinity");
  });
  await t.test("Boolean", () => {
    assert.equal(got.BoolT, true);
    assert.equal(got.BoolF, false);
  });
  await t.test("DateTime (Date)", () => {
    assert.ok(got.When instanceof Date, `When is ${typeof got.When}: ${got.When}`);
    assert.equal(got.When.getTime(), when.getTime());
    // A Date has millisecond precision; the 100ns value survives as a Date too.
    assert.equal(got.WhenPrecise.toISOString(), "2021-03-04T05:06:07.123Z");
  });
  await t.test("Guid", () => {
    assert.deepEqual(got.Id, { type: "Guid", value: guid });
  });
  await t.test("Binary (Uint8Array)", () => {
    assert.ok(got.Bin instanceof Uint8Array, `Bin is ${Object.prototype.toString.call(got.Bin)}`);
    assert.deepEqual([...got.Bin], [...bytes]);
  });
  await t.test("no extra properties", () => {
    const { partitionKey, rowKey, ...props } = entity;
    assert.deepEqual(Object.keys(userProps(got)).sort(), Object.keys(props).sort());
  });

  await t.test("wire format (minimalmetadata)", () => {
    const body = raw.last.bodyAsText;
    const j = JSON.parse(body);
    // Integral doubles keep a decimal point and are not annotated.
    assert.match(body, /"DblIntegral":5\.0[,}]/, `DblIntegral in ${body}`);
    assert.equal(j["DblIntegral@odata.type"], undefined);
    assert.equal(j["Dbl@odata.type"], undefined);
    assert.match(body, /"I32":42[,}]/);
    assert.equal(j["I32@odata.type"], undefined);
    for (const k of ["DblNaN", "DblInf", "DblNegInf"]) {
      assert.equal(j[`${k}@odata.type`], "Edm.Double", k);
    }
    assert.equal(j["I64@odata.type"], "Edm.Int64");
    assert.equal(j.I64, "9007199254740993");
    assert.equal(j["I64BigInt@odata.type"], "Edm.Int64");
    assert.equal(j["When@odata.type"], "Edm.DateTime");
    assert.equal(j.When, "2021-03-04T05:06:07.089Z");
    assert.equal(j.WhenPrecise, "2021-03-04T05:06:07.1234567Z");
    assert.equal(j["Id@odata.type"], "Edm.Guid");
    assert.equal(j["Bin@odata.type"], "Edm.Binary");
    assert.equal(j.Bin, Buffer.from(bytes).toString("base64"));
    assert.ok(j["odata.etag"], "odata.etag in the body");
    assert.equal(j["odata.etag"], raw.last.headers.get("etag"));
  });

  await t.test("disableTypeConversion", async () => {
    const [e] = await collect(c.listEntities({ disableTypeConversion: true }));
    assert.deepEqual(e.I32, { type: "Int32", value: "42" });
    assert.deepEqual(e.I64, { type: "Int64", value: "9007199254740993" });
    assert.deepEqual(e.Dbl, { type: "Double", value: "3.25" });
    assert.deepEqual(e.DblNaN, { type: "Double", value: "NaN" });
    assert.deepEqual(e.BoolT, { type: "Boolean", value: "true" });
    assert.deepEqual(e.When, { type: "DateTime", value: "2021-03-04T05:06:07.089Z" });
    assert.deepEqual(e.WhenPrecise, { type: "DateTime", value: "2021-03-04T05:06:07.1234567Z" });
    assert.deepEqual(e.Id, { type: "Guid", value: guid });
    assert.deepEqual(e.Bin, { type: "Binary", value: Buffer.from(bytes).toString("base64") });
    assert.deepEqual(e.Str, { type: "String", value: entity.Str });
  });

  // Typed filters find the entity only if each value was stored with the
  // right type (docs/COMPATIBILITY.md §7: a type mismatch never matches eq).
  const filters = {
    "Str eq 'héllo wörld ✓ 日本'": true,
    "I32 eq 42": true,
    "I32 eq 42L": false, // Int32 property vs Int64 literal: mismatch
    "I64 eq 9007199254740993L": true,
    "I64 eq 9007199254740992L": false,
    "I64Min eq -9223372036854775808L": true,
    "I64BigInt eq 1234567890123L": true,
    "Dbl eq 3.25": true,
    "DblIntegral eq 5.0": true, // stored as Double, not Int32
    "DblIntegral eq 5": true, // Double property vs Int32 literal: widened
    "BoolT eq true": true,
    "BoolF eq false": true,
    "BoolT": true,
    "When eq datetime'2021-03-04T05:06:07.089Z'": true,
    "WhenPrecise eq datetime'2021-03-04T05:06:07.1234567Z'": true,
    "WhenPrecise eq datetime'2021-03-04T05:06:07.123Z'": false,
    [`Id eq guid'${guid}'`]: true,
    "Bin eq X'0001027f80fdfeff'": true,
    "Bin eq binary'0001027f80fdfeff'": true,
  };
  await t.test("typed $filter", async () => {
    const wrong = [];
    for (const [filter, want] of Object.entries(filters)) {
      const res = await collect(c.listEntities({ queryOptions: { filter } }));
      if ((res.length === 1) !== want) wrong.push(`${filter}: got ${res.length} entities, want ${want ? 1 : 0}`);
    }
    assert.deepEqual(wrong, []);
  });
});

test("Double values: integral doubles stay doubles through update and query", async (t) => {
  const c = await newTable(t);
  await c.upsertEntity({ partitionKey: "p", rowKey: "d", V: { type: "Double", value: 7 } }, "Replace");
  await c.updateEntity({ partitionKey: "p", rowKey: "d", W: { type: "Double", value: -3 } }, "Merge");
  const raw = rawResponse();
  await collect(c.listEntities({ onResponse: raw.cb }));
  const body = raw.last.bodyAsText;
  assert.match(body, /"V":7\.0[,}]/, body);
  assert.match(body, /"W":-3\.0[,}]/, body);
  // Plain JS numbers with a fraction are doubles, integers are Int32.
  await c.upsertEntity({ partitionKey: "p", rowKey: "n", F: 0.1, N: 7 });
  const raw2 = rawResponse();
  await c.getEntity("p", "n", { onResponse: raw2.cb });
  assert.match(raw2.last.bodyAsText, /"F":0\.1[,}]/);
  assert.match(raw2.last.bodyAsText, /"N":7[,}]/);
});
