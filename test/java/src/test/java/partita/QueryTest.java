package partita;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.azure.core.exception.HttpResponseException;
import com.azure.core.http.rest.PagedResponse;
import com.azure.data.tables.TableClient;
import com.azure.data.tables.models.ListEntitiesOptions;
import com.azure.data.tables.models.TableEntity;
import com.azure.data.tables.models.TableTransactionAction;
import com.azure.data.tables.models.TableTransactionActionType;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/** Filters on every type, $top, paging by page with continuation tokens, and $select. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class QueryTest {
  private TableClient t;
  static final OffsetDateTime BASE = OffsetDateTime.parse("2024-01-01T00:00:00.1234567Z");

  private static String rk(int i) {
    return String.format("r%03d", i);
  }

  static UUID guid(int i) {
    return UUID.fromString(String.format("00000000-0000-0000-0000-%012d", i));
  }

  @BeforeAll
  void fill() {
    t = Partita.newTable("jqry");
    // 25 entities in partition "a" (one transaction), 5 in "b".
    List<TableTransactionAction> batch = new ArrayList<>();
    for (int i = 0; i < 25; i++) {
      batch.add(new TableTransactionAction(TableTransactionActionType.CREATE, entity("a", i)));
    }
    t.submitTransaction(batch);
    for (int i = 0; i < 5; i++) {
      t.createEntity(entity("b", i));
    }
  }

  private static TableEntity entity(String pk, int i) {
    return new TableEntity(pk, rk(i))
        .addProperty("I", i)
        .addProperty("L", 10_000_000_000L + i)
        .addProperty("D", i + 0.5)
        .addProperty("B", i % 2 == 0)
        .addProperty("S", "s'" + i)
        .addProperty("T", BASE.plusDays(i))
        .addProperty("G", guid(i))
        .addProperty("X", new byte[] {(byte) i, (byte) 0xff});
  }

  @AfterAll
  void drop() {
    t.deleteTable();
  }

  private List<String> keys(String filter) {
    return t.listEntities(new ListEntitiesOptions().setFilter(filter), null, null).stream()
        .map(e -> e.getPartitionKey() + "/" + e.getRowKey()).collect(Collectors.toList());
  }

  @Test
  void filtersOnEveryType() {
    assertEquals(List.of("a/r003", "b/r003"), keys("I eq 3"));
    assertEquals(List.of("a/r023", "a/r024"), keys("PartitionKey eq 'a' and I gt 22"));
    assertEquals(List.of("a/r004"), keys("PartitionKey eq 'a' and L eq 10000000004L"));
    assertEquals(List.of("b/r000", "b/r001"), keys("PartitionKey eq 'b' and D le 1.5"));
    assertEquals(List.of("b/r001", "b/r003"), keys("PartitionKey eq 'b' and B eq false"));
    // A quote inside a string literal is doubled.
    assertEquals(List.of("a/r007"), keys("S eq 's''7'"));
    assertEquals(List.of("a/r012", "b/r001"), keys("S eq 's''12' or S eq 's''1' and PartitionKey eq 'b'"));
    assertEquals(List.of("a/r005"),
        keys("PartitionKey eq 'a' and T eq datetime'2024-01-06T00:00:00.1234567Z'"));
    assertEquals(List.of("a/r000", "a/r001"),
        keys("PartitionKey eq 'a' and T lt datetime'2024-01-02T12:00:00Z'"));
    assertEquals(List.of("b/r002"), keys("PartitionKey eq 'b' and G eq guid'" + guid(2) + "'"));
    assertEquals(List.of("b/r004"), keys("PartitionKey eq 'b' and X eq X'04ff'"));
    assertEquals(List.of("b/r004"), keys("PartitionKey eq 'b' and X eq binary'04ff'"));
    // Boolean combinations, not, and key ranges.
    assertEquals(List.of("a/r010", "a/r011", "b/r001"),
        keys("(PartitionKey eq 'a' and RowKey ge 'r010' and RowKey lt 'r012') or (PartitionKey eq 'b' and RowKey eq 'r001')"));
    assertEquals(List.of("b/r000", "b/r001", "b/r002"),
        keys("PartitionKey gt 'a' and not (I ge 3)"));
    // Timestamp is filterable like any DateTime.
    assertEquals(30, keys("Timestamp ge datetime'2020-01-01T00:00:00Z'").size());
    assertEquals(List.of(), keys("Timestamp lt datetime'2020-01-01T00:00:00Z'"));
    // A property the entity lacks never matches.
    assertEquals(List.of(), keys("Missing eq 1"));
  }

  @Test
  void badFilterIsInvalidInput() {
    // listEntities surfaces errors as HttpResponseException (an implementation subclass), not
    // TableServiceException; the status and the x-ms-error-code header are the service's.
    for (String bad : List.of("I eq", "I eq 'unterminated", "I eq 1 and")) {
      HttpResponseException e = assertThrows(HttpResponseException.class, () -> keys(bad));
      assertEquals(400, e.getResponse().getStatusCode(), bad);
      assertEquals("InvalidInput", e.getResponse().getHeaderValue("x-ms-error-code"), bad);
    }
  }

  @Test
  void pagingByPageWithContinuation() {
    ListEntitiesOptions opts = new ListEntitiesOptions().setFilter("PartitionKey eq 'a'").setTop(10);
    List<Integer> sizes = new ArrayList<>();
    List<String> tokens = new ArrayList<>();
    List<String> rows = new ArrayList<>();
    for (PagedResponse<TableEntity> page : t.listEntities(opts, null, null).iterableByPage()) {
      sizes.add(page.getValue().size());
      tokens.add(page.getContinuationToken());
      page.getValue().forEach(e -> rows.add(e.getRowKey()));
    }
    assertEquals(List.of(10, 10, 5), sizes);
    assertNotNull(tokens.get(0));
    assertNotNull(tokens.get(1));
    assertNull(tokens.get(2));
    List<String> want = new ArrayList<>();
    for (int i = 0; i < 25; i++) {
      want.add(rk(i));
    }
    assertEquals(want, rows);

    // Resuming from the second page's token gives the last five.
    List<String> rest = new ArrayList<>();
    for (PagedResponse<TableEntity> page :
        t.listEntities(opts, null, null).iterableByPage(tokens.get(1))) {
      page.getValue().forEach(e -> rest.add(e.getRowKey()));
    }
    assertEquals(want.subList(20, 25), rest);

    // Paging across partitions: every entity once, in key order.
    List<String> all = new ArrayList<>();
    int pages = 0;
    for (PagedResponse<TableEntity> page :
        t.listEntities(new ListEntitiesOptions().setTop(7), null, null).iterableByPage()) {
      pages++;
      assertTrue(page.getValue().size() <= 7);
      page.getValue().forEach(e -> all.add(e.getPartitionKey() + "/" + e.getRowKey()));
    }
    assertEquals(30, all.size());
    assertEquals(all.stream().sorted().collect(Collectors.toList()), all);
    assertEquals(5, pages);
  }

  @Test
  void select() {
    List<TableEntity> got = t.listEntities(
        new ListEntitiesOptions().setFilter("PartitionKey eq 'b'").setSelect(List.of("I", "S")), null, null)
        .stream().collect(Collectors.toList());
    assertEquals(5, got.size());
    for (int i = 0; i < 5; i++) {
      TableEntity e = got.get(i);
      assertEquals(i, e.getProperty("I"));
      assertEquals("s'" + i, e.getProperty("S"));
      for (String absent : List.of("L", "D", "B", "T", "G", "X")) {
        assertFalse(e.getProperties().containsKey(absent), absent + " was not selected: " + e.getProperties());
      }
    }
  }
}
