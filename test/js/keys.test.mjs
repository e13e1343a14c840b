// Keys with quotes, unicode and URL-special characters, through every point
// operation and through filters; key sort order.
import { test } from "node:test";
import assert from "node:assert/strict";
import { odata } from "@azure/data-tables";
import { collect, compareKeys, expectRestError, newTable } from "./helpers.mjs";

const keys = [
  "O'Brien",
  "''",
  "'",
  "it's 'quoted' ''twice''",
  'double "quotes"',
  "ключ",
  "日本語キー",
  "emoji 😀 key",
  "mixed 'ü' ß",
  "space key",
  "percent %25 %2F literal",
  "plus+sign",
  "paren(1),comma=eq;semi",
  "amp&and$dollar@at",
  "~tilde!bang*star",
  "[brackets]{braces}",
  "colon:key",
];

test("point operations with special keys", async (t) => {
  const c = await newTable(t);
  for (const [i, k] of keys.entries()) {
    await t.test(JSON.stringify(k), async () => {
      // The same text as both keys, and as PK with a simple RK.
      const e = { partitionKey: k, rowKey: k, I: i };
      await c.createEntity(e);
      await c.createEntity({ partitionKey: k, rowKey: `rk${i}`, I: i });
      let got = await c.getEntity(k, k);
      assert.equal(got.partitionKey, k);
      assert.equal(got.rowKey, k);
      assert.equal(got.I, i);

      const m = await c.updateEntity({ partitionKey: k, rowKey: k, M: "merged" }, "Merge", { etag: got.etag });
      got = await c.getEntity(k, k);
      assert.equal(got.M, "merged");
      assert.equal(got.I, i);
      await c.updateEntity({ partitionKey: k, rowKey: k, R: "replaced" }, "Replace", { etag: m.etag });
      got = await c.getEntity(k, k);
      assert.deepEqual([got.R, got.M, got.I], ["replaced", undefined, undefined]);
      await c.upsertEntity({ partitionKey: k, rowKey: k, U: 1 }, "Merge");

      const byFilter = await collect(c.listEntities({ queryOptions: { filter: odata`PartitionKey eq ${k}` } }));
      assert.deepEqual(
        byFilter.map((x) => x.rowKey).sort(),
        [k, `rk${i}`].sort(),
        `filter PartitionKey eq ${odata`${k}`}`,
      );
      const byRow = await collect(
        c.listEntities({ queryOptions: { filter: odata`PartitionKey eq ${k} and RowKey eq ${k}` } }),
      );
      assert.equal(byRow.length, 1);
      assert.equal(byRow[0].U, 1);

      await c.deleteEntity(k, k);
      await expectRestError(c.getEntity(k, k), 404, "ResourceNotFound");
      assert.equal((await c.getEntity(k, `rk${i}`)).I, i);
    });
  }

  await t.test("listing returns every key intact, sorted", async () => {
    const all = await collect(c.listEntities());
    assert.deepEqual(
      all.map((e) => e.partitionKey),
      [...keys].sort(),
      "partition keys as listed vs JS (UTF-16) order",
    );
  });
});

test("empty keys", async (t) => {
  const c = await newTable(t);
  await c.createEntity({ partitionKey: "", rowKey: "", V: 1 });
  await c.createEntity({ partitionKey: "", rowKey: "a", V: 2 });
  await c.createEntity({ partitionKey: "a", rowKey: "", V: 3 });
  assert.equal((await c.getEntity("", "")).V, 1);
  assert.equal((await c.getEntity("a", "")).V, 3);
  await c.updateEntity({ partitionKey: "", rowKey: "", W: 1 }, "Merge");
  const all = await collect(c.listEntities());
  assert.deepEqual(all.map((e) => [e.partitionKey, e.rowKey, e.V]), [["", "", 1], ["", "a", 2], ["a", "", 3]]);
  // Paging must work when the next key is empty (tokens must not be empty).
  const pages = [];
  for await (const p of c.listEntities().byPage({ maxPageSize: 1 })) pages.push(p.map((e) => e.V));
  assert.deepEqual(pages.flat(), [1, 2, 3]);
  await c.deleteEntity("", "");
  await expectRestError(c.getEntity("", ""), 404, "ResourceNotFound");
});

test("keys sort ordinally (UTF-16 code units), across pages", async (t) => {
  const c = await newTable(t);
  // Upper before lower case, "10" before "9", a supplementary character
  // (surrogate pair) before U+FF21 (docs/COMPATIBILITY.md §12).
  const rks = ["B", "a", "aa", "10", "9", "Z", "~", "é", "ÿ", "Ā", "日", "\uFF21", "😀", "\uE000", "A b", "A", ""];
  for (const r of rks) await c.createEntity({ partitionKey: "p", rowKey: r });
  const want = [...rks].sort();
  const all = await collect(c.listEntities());
  assert.deepEqual(all.map((e) => e.rowKey), want);
  const paged = [];
  for await (const p of c.listEntities().byPage({ maxPageSize: 4 })) paged.push(...p.map((e) => e.rowKey));
  assert.deepEqual(paged, want);
  const gt = await collect(c.listEntities({ queryOptions: { filter: odata`RowKey gt ${"日"}` } }));
  assert.deepEqual(gt.map((e) => e.rowKey), want.filter((r) => r > "日"));
  all.forEach((e, i) => i > 0 && assert.ok(compareKeys(all[i - 1], e) < 0));
});
