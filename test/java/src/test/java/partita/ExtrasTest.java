package partita;

import static org.junit.jupiter.api.Assertions.*;
import static partita.Partita.assertServiceError;

import com.azure.data.tables.*;
import com.azure.data.tables.models.*;
import java.time.*;
import java.util.*;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** What a Java application does that the other classes do not cover: odd keys, Java date types, values as other SDKs write them, transaction failures, merges past the limits, stored access policy limits. */
class ExtrasTest {
  private final TableClient t = Partita.newTable("jxtra");

  @AfterEach
  void drop() { t.deleteTable(); }

  private static TableTransactionAction act(TableTransactionActionType ty, TableEntity e) { return new TableTransactionAction(ty, e); }

  @Test
  void emptyAndOddKeys() {
    t.createEntity(new TableEntity("", "").addProperty("V", 1));
    assertEquals(1, t.getEntity("", "").getProperty("V"));
    t.updateEntity(new TableEntity("", "").addProperty("W", 2));
    assertEquals(204, t.deleteEntityWithResponse(new TableEntity("", ""), false, null, null).getStatusCode());
    for (String k : List.of("a+b", "a b", "a%20b", "a&b=c", "(x)", "ü中😀", "a'b", "x;y", "a:b", "$x")) {
      t.createEntity(new TableEntity(k, k).addProperty("K", k));
      assertEquals(k, t.getEntity(k, k).getProperty("K"));
      assertEquals(List.of(k), t.listEntities(new ListEntitiesOptions()
          .setFilter("PartitionKey eq '" + k.replace("'", "''") + "'"), null, null)
          .stream().map(TableEntity::getRowKey).collect(Collectors.toList()));
      assertEquals(204, t.deleteEntityWithResponse(new TableEntity(k, k), false, null, null).getStatusCode());
    }
  }

  @Test
  void javaDateTimeTypes() {
    t.createEntity(new TableEntity("dt", "1")
        .addProperty("Off", OffsetDateTime.parse("2024-03-01T10:00:00.1234567+05:30"))
        .addProperty("Inst", Instant.parse("2024-03-01T10:00:00.5Z"))
        .addProperty("Zoned", ZonedDateTime.parse("2024-03-01T10:00:00-08:00[America/Los_Angeles]"))
        .addProperty("Date", Date.from(Instant.parse("2024-03-01T10:00:00.250Z")))
        .addProperty("Local", LocalDateTime.parse("2024-03-01T10:00:00")));
    TableEntity e = t.getEntity("dt", "1");
    assertEquals(OffsetDateTime.parse("2024-03-01T04:30:00.1234567Z"), e.getProperty("Off"));
    assertEquals(OffsetDateTime.parse("2024-03-01T10:00:00.5Z"), e.getProperty("Inst"));
    assertEquals(OffsetDateTime.parse("2024-03-01T18:00:00Z"), e.getProperty("Zoned"));
    assertEquals(OffsetDateTime.parse("2024-03-01T10:00:00.25Z"), e.getProperty("Date"));
    assertEquals(OffsetDateTime.parse("2024-03-01T10:00:00Z"), e.getProperty("Local"));
    assertEquals(1, t.listEntities(new ListEntitiesOptions()
        .setFilter("Off eq datetime'2024-03-01T04:30:00.1234567Z'"), null, null).stream().count());
  }

  @Test
  void annotatedValuesAsOtherSdksWriteThem() {
    t.createEntity(new TableEntity("a", "1")
        .addProperty("L", "123").addProperty("L@odata.type", "Edm.Int64")
        .addProperty("LN", 7).addProperty("LN@odata.type", "Edm.Int64")
        .addProperty("D", 5).addProperty("D@odata.type", "Edm.Double")
        .addProperty("G", "0f8fad5b-d9cb-469f-a165-70867728950e").addProperty("G@odata.type", "Edm.Guid")
        .addProperty("B", "AQID").addProperty("B@odata.type", "Edm.Binary"));
    TableEntity e = t.getEntity("a", "1");
    assertEquals(123L, e.getProperty("L"));
    assertEquals(7L, e.getProperty("LN"));
    assertEquals(5.0, e.getProperty("D"));
    assertEquals(UUID.fromString("0f8fad5b-d9cb-469f-a165-70867728950e"), e.getProperty("G"));
    assertArrayEquals(new byte[] {1, 2, 3}, (byte[]) e.getProperty("B"));
    assertServiceError(400, "InvalidInput", () -> t.createEntity(new TableEntity("a", "2")
        .addProperty("I", "9223372036854775808").addProperty("I@odata.type", "Edm.Int64")));
  }

  @Test
  void transactionFailureModes() {
    TableTransactionFailedException e = assertThrows(TableTransactionFailedException.class, () -> t.submitTransaction(List.of(
        act(TableTransactionActionType.CREATE, new TableEntity("p1", "a")),
        act(TableTransactionActionType.CREATE, new TableEntity("p2", "a")))));
    assertEquals("CommandsInBatchActOnDifferentPartitions", e.getValue().getErrorCode().toString());
    assertEquals(1, e.getFailedTransactionActionIndex());
    // A one-action changeset failing with these codes carries no index, as on the service.
    e = assertThrows(TableTransactionFailedException.class, () -> t.submitTransaction(List.of(
        act(TableTransactionActionType.UPDATE_MERGE, new TableEntity("p", "missing")))));
    assertEquals("ResourceNotFound", e.getValue().getErrorCode().toString());
    assertNull(e.getFailedTransactionActionIndex());
    // Per-entity validation errors name their index.
    e = assertThrows(TableTransactionFailedException.class, () -> t.submitTransaction(List.of(
        act(TableTransactionActionType.CREATE, new TableEntity("p", "a")),
        act(TableTransactionActionType.CREATE, new TableEntity("p", "b").addProperty("S", "x".repeat(32769))))));
    assertEquals("PropertyValueTooLarge", e.getValue().getErrorCode().toString());
    assertEquals(1, e.getFailedTransactionActionIndex());
    // More than 4 MiB: the whole request is refused with 413.
    List<TableTransactionAction> big = new ArrayList<>();
    for (int i = 0; i < 100; i++) {
      big.add(act(TableTransactionActionType.CREATE, new TableEntity("p", "r" + i).addProperty("S", "x".repeat(30000)).addProperty("T", "y".repeat(15000))));
    }
    assertServiceError(413, "RequestBodyTooLarge", () -> t.submitTransaction(big));
    assertEquals(0, t.listEntities().stream().count());
    // ETag-conditioned update and delete inside a transaction.
    t.createEntity(new TableEntity("p", "x"));
    TableEntity cur = t.getEntity("p", "x");
    t.submitTransaction(List.of(new TableTransactionAction(TableTransactionActionType.UPDATE_REPLACE, cur.addProperty("V", 1), true)));
    TableEntity now = t.getEntity("p", "x");
    t.submitTransaction(List.of(new TableTransactionAction(TableTransactionActionType.DELETE, now, true)));
    assertServiceError(404, "ResourceNotFound", () -> t.getEntity("p", "x"));
  }

  @Test
  void mergeBeyondLimits() {
    TableEntity e = new TableEntity("m", "1");
    for (int i = 0; i < 200; i++) e.addProperty("A" + i, i);
    t.createEntity(e);
    TableEntity f = new TableEntity("m", "1");
    for (int i = 0; i < 53; i++) f.addProperty("B" + i, i);
    assertServiceError(400, "TooManyProperties", () -> t.updateEntity(f, TableEntityUpdateMode.MERGE));
    assertServiceError(400, "TooManyProperties", () -> t.upsertEntity(f));
  }

  @Test
  void accessPolicyLimits() {
    List<TableSignedIdentifier> six = new ArrayList<>();
    for (int i = 0; i < 6; i++) six.add(new TableSignedIdentifier("id" + i).setAccessPolicy(new TableAccessPolicy().setPermissions("r")));
    assertServiceError(400, "InvalidXmlDocument", () -> t.setAccessPolicies(six));
    assertServiceError(400, "InvalidXmlDocument", () -> t.setAccessPolicies(List.of(new TableSignedIdentifier("x".repeat(65)))));
    t.setAccessPolicies(List.of(new TableSignedIdentifier("idonly")));
    TableSignedIdentifier got = t.getAccessPolicies().getIdentifiers().get(0);
    assertEquals("idonly", got.getId());
    assertNull(got.getAccessPolicy());
    assertServiceError(404, "TableNotFound", () -> Partita.service().getTableClient(Partita.tableName("jnone")).getAccessPolicies());
  }
}
