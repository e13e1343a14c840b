// listEntities: paging across ~2500 entities in several partitions, sort
// order, continuation, $filter and $select.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { odata } from "@azure/data-tables";
import { collect, compareKeys, newTable, rawResponse, runLimited } from "./helpers.mjs";

const partitions = ["p0", "p1", "p2", "p3", "p4"];
const perPartition = 500;
const total = partitions.length * perPartition;

function rk(i) {
  return `r${String(i).padStart(4, "0")}`;
}

// checkSorted asserts strictly increasing (PK, RK) order: sorted, no duplicates.
function checkSorted(entities, label) {
  for (let i = 1; i < entities.length; i++) {
    const a = entities[i - 1];
    const b = entities[i];
    if (compareKeys(a, b) >= 0) {
      assert.fail(
        `${label}: entity ${i} (${b.partitionKey}/${b.rowKey}) does not sort after entity ${i - 1} (${a.partitionKey}/${a.rowKey})`,
      );
    }
  }
}

describe("listEntities over 2500 entities", () => {
  let c;
  before(async () => {
    c = await newTable(undefined, "jsquery");
    // Insert in a scrambled order so that the server has to sort.
    const items = [];
    for (const pk of partitions) {
      for (let i = 0; i < perPartition; i++) {
        const n = partitions.indexOf(pk) * perPartition + i;
        items.push({ partitionKey: pk, rowKey: rk(i), Num: n, Even: n % 2 === 0, Tag: `t${n % 7}`, Other: "x" });
      }
    }
    for (let i = items.length - 1; i > 0; i--) {
      const j = (i * 7919 + 13) % (i + 1);
      [items[i], items[j]] = [items[j], items[i]];
    }
    await runLimited(items, 16, (e) => c.createEntity(e));
  });
  // Deleting the table is enough to clean up.
  after(() => c?.deleteTable());

  test("iterating without byPage returns everything in order", async () => {
    const all = await collect(c.listEntities());
    assert.equal(all.length, total);
    checkSorted(all, "listEntities()");
  });

  for (const maxPageSize of [333, 500, 1000, 1]) {
    const limit = maxPageSize === 1 ? 40 : Infinity; // 1-entity pages: only check the first few
    test(`byPage({maxPageSize: ${maxPageSize}})`, async () => {
      const pages = [];
      for await (const page of c.listEntities().byPage({ maxPageSize })) {
        assert.ok(page.length <= maxPageSize, `page ${pages.length} has ${page.length} > ${maxPageSize} entities`);
        pages.push(page);
        if (pages.length >= limit) break;
      }
      const all = pages.flat();
      checkSorted(all, `byPage(${maxPageSize})`);
      if (limit !== Infinity) {
        assert.equal(all.length, limit);
        assert.equal(all[limit - 1].rowKey, rk(limit - 1));
        return;
      }
      assert.equal(all.length, total, `pages: ${pages.map((p) => p.length).join(",")}`);
      assert.ok(pages.length >= Math.ceil(total / maxPageSize), `only ${pages.length} pages`);
      // All but the last page have a continuation token.
      pages.slice(0, -1).forEach((p, i) => assert.ok(p.continuationToken, `page ${i} lacks a continuation token`));
      assert.equal(pages.at(-1).continuationToken, undefined);
      const nums = new Set(all.map((e) => e.Num));
      assert.equal(nums.size, total, "duplicate entities across pages");
    });
  }

  test("resume from a continuation token", async () => {
    const first = await c.listEntities().byPage({ maxPageSize: 700 }).next();
    const token = first.value.continuationToken;
    assert.ok(token, "first page has a continuation token");
    const rest = [];
    for await (const page of c.listEntities().byPage({ maxPageSize: 700, continuationToken: token })) {
      rest.push(...page);
    }
    assert.equal(first.value.length + rest.length, total);
    checkSorted([...first.value, ...rest], "resumed");
  });

  test("filter on keys, with paging", async () => {
    const filter = odata`PartitionKey eq ${"p2"} and RowKey ge ${rk(100)} and RowKey lt ${rk(200)}`;
    const pages = [];
    for await (const page of c.listEntities({ queryOptions: { filter } }).byPage({ maxPageSize: 30 })) {
      pages.push(page);
    }
    const all = pages.flat();
    assert.equal(all.length, 100);
    assert.equal(pages.length, 4, `page sizes ${pages.map((p) => p.length)}`);
    checkSorted(all, "filtered");
    assert.ok(all.every((e) => e.partitionKey === "p2"));
    assert.equal(all[0].rowKey, rk(100));
    assert.equal(all.at(-1).rowKey, rk(199));
  });

  test("filter on properties across partitions", async () => {
    const gt = await collect(c.listEntities({ queryOptions: { filter: odata`Num gt ${2400}` } }));
    assert.equal(gt.length, 99);
    checkSorted(gt, "Num gt 2400");

    const tag = await collect(c.listEntities({ queryOptions: { filter: odata`Tag eq ${"t3"} and Even eq ${true}` } }));
    const want = [...Array(total).keys()].filter((n) => n % 7 === 3 && n % 2 === 0).length;
    assert.equal(tag.length, want);
    assert.ok(tag.every((e) => e.Tag === "t3" && e.Even === true));

    const or = await collect(
      c.listEntities({ queryOptions: { filter: "(PartitionKey eq 'p0' and Num lt 3) or (PartitionKey eq 'p4' and Num ge 2498)" } }),
    );
    assert.deepEqual(or.map((e) => e.Num), [0, 1, 2, 2498, 2499]);

    const none = await collect(c.listEntities({ queryOptions: { filter: odata`Tag eq ${"nope"}` } }));
    assert.deepEqual(none, []);
  });

  test("select, including a property no entity has", async () => {
    const filter = odata`PartitionKey eq ${"p1"} and RowKey lt ${rk(5)}`;
    const res = await collect(c.listEntities({ queryOptions: { filter, select: ["Num", "Missing"] } }));
    assert.equal(res.length, 5);
    for (const e of res) {
      assert.equal(typeof e.Num, "number");
      assert.ok(e.Missing === null || e.Missing === undefined, `Missing = ${JSON.stringify(e.Missing)}`);
      assert.equal(e.Other, undefined);
      assert.equal(e.Tag, undefined);
      assert.equal(e.partitionKey, undefined, "PartitionKey is not returned unless selected");
      assert.ok(e.etag, "etag is always returned");
    }
    assert.deepEqual(res.map((e) => e.Num), [500, 501, 502, 503, 504]);

    const keys = await collect(
      c.listEntities({ queryOptions: { filter, select: ["PartitionKey", "RowKey"] } }),
    );
    assert.deepEqual(keys.map((e) => `${e.partitionKey}/${e.rowKey}`), [0, 1, 2, 3, 4].map((i) => `p1/${rk(i)}`));
    assert.ok(keys.every((e) => e.Num === undefined));
  });

  test("select: a missing selected property is written as null (docs/COMPATIBILITY.md §5)", async () => {
    const raw = rawResponse();
    const filter = odata`PartitionKey eq ${"p1"} and RowKey eq ${rk(0)}`;
    const res = await collect(c.listEntities({ queryOptions: { filter, select: ["Num", "Missing"] }, onResponse: raw.cb }));
    assert.equal(res.length, 1);
    const body = JSON.parse(raw.last.bodyAsText);
    assert.equal(body.value.length, 1);
    assert.ok("Missing" in body.value[0], `no "Missing" key in ${raw.last.bodyAsText}`);
    assert.equal(body.value[0].Missing, null);
    assert.equal(res[0].Missing, null);
  });

  test("select with paging", async () => {
    let n = 0;
    let pages = 0;
    for await (const page of c.listEntities({ queryOptions: { select: ["Num"] } }).byPage({ maxPageSize: 900 })) {
      pages++;
      for (const e of page) {
        assert.equal(e.Num, n++);
        assert.equal(e.Tag, undefined);
      }
    }
    assert.equal(n, total);
    assert.equal(pages, 3);
  });
});
