package partita;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.azure.data.tables.TableClient;
import com.azure.data.tables.models.ListEntitiesOptions;
import com.azure.data.tables.models.TableEntity;
import com.azure.data.tables.models.TableTransactionAction;
import com.azure.data.tables.models.TableTransactionActionResponse;
import com.azure.data.tables.models.TableTransactionActionType;
import com.azure.data.tables.models.TableTransactionFailedException;
import com.azure.data.tables.models.TableTransactionResult;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** submitTransaction with every action type, and the failing action's index on failure. */
class TransactionTest {
  private final TableClient t = Partita.newTable("jtx");

  @AfterEach
  void drop() {
    t.deleteTable();
  }

  private Map<String, Map<String, Object>> contents() {
    Map<String, Map<String, Object>> m = new TreeMap<>();
    for (TableEntity e : t.listEntities()) {
      Map<String, Object> props = new TreeMap<>(e.getProperties());
      props.keySet().removeIf(k -> k.equals("PartitionKey") || k.equals("RowKey")
          || k.equals("Timestamp") || k.startsWith("odata.") || k.endsWith("@odata.type"));
      m.put(e.getPartitionKey() + "/" + e.getRowKey(), props);
    }
    return m;
  }

  /**
   * Runs a transaction that must fail at action index with this error code. (The synchronous
   * client builds TableTransactionFailedException without the HTTP response, so there is no
   * status to check; the code and index come from the failed part of the response.)
   */
  private static TableTransactionFailedException assertTxFailed(String code, int index,
      org.junit.jupiter.api.function.Executable op) {
    TableTransactionFailedException e = assertThrows(TableTransactionFailedException.class, op);
    assertEquals(code, String.valueOf(e.getValue().getErrorCode()), e.getMessage());
    assertEquals(index, e.getFailedTransactionActionIndex(), e.getMessage());
    return e;
  }

  private static TableTransactionAction act(TableTransactionActionType type, TableEntity e) {
    return new TableTransactionAction(type, e);
  }

  @Test
  void everyActionType() {
    t.createEntity(new TableEntity("p", "um").addProperty("A", 1).addProperty("B", 1));
    t.createEntity(new TableEntity("p", "ur").addProperty("A", 1).addProperty("B", 1));
    t.createEntity(new TableEntity("p", "del").addProperty("A", 1));
    t.createEntity(new TableEntity("p", "sm").addProperty("A", 1).addProperty("B", 1));
    t.createEntity(new TableEntity("p", "sr").addProperty("A", 1).addProperty("B", 1));

    List<TableTransactionAction> actions = List.of(
        act(TableTransactionActionType.CREATE, new TableEntity("p", "new").addProperty("C", "c")),
        act(TableTransactionActionType.UPDATE_MERGE, new TableEntity("p", "um").addProperty("B", 2)),
        act(TableTransactionActionType.UPDATE_REPLACE, new TableEntity("p", "ur").addProperty("B", 2)),
        act(TableTransactionActionType.DELETE, new TableEntity("p", "del")),
        act(TableTransactionActionType.UPSERT_MERGE, new TableEntity("p", "sm").addProperty("B", 2)),
        act(TableTransactionActionType.UPSERT_REPLACE, new TableEntity("p", "sr").addProperty("B", 2)),
        act(TableTransactionActionType.UPSERT_MERGE, new TableEntity("p", "smnew").addProperty("B", 3)),
        act(TableTransactionActionType.UPSERT_REPLACE, new TableEntity("p", "srnew").addProperty("B", 4)));
    TableTransactionResult res = t.submitTransaction(actions);

    List<TableTransactionActionResponse> rs = res.getTransactionActionResponses();
    assertEquals(actions.size(), rs.size());
    for (int i = 0; i < rs.size(); i++) {
      assertEquals(204, rs.get(i).getStatusCode(), "action " + i);
    }
    assertEquals(204, res.getTableTransactionActionResponseByRowKey("del").getStatusCode());
    assertEquals(204, res.getTableTransactionActionResponseByRowKey("new").getStatusCode());

    Map<String, Map<String, Object>> want = new TreeMap<>();
    want.put("p/new", Map.of("C", "c"));
    want.put("p/um", Map.of("A", 1, "B", 2));
    want.put("p/ur", Map.of("B", 2));
    want.put("p/sm", Map.of("A", 1, "B", 2));
    want.put("p/sr", Map.of("B", 2));
    want.put("p/smnew", Map.of("B", 3));
    want.put("p/srnew", Map.of("B", 4));
    assertEquals(want, contents());
  }

  @Test
  void failingIndexAndNothingWritten() {
    t.createEntity(new TableEntity("p", "exists").addProperty("V", 1));
    Map<String, Map<String, Object>> before = contents();

    // Index 2 inserts an entity that exists: EntityAlreadyExists at index 2.
    assertTxFailed("EntityAlreadyExists", 2, () -> t.submitTransaction(List.of(
        act(TableTransactionActionType.CREATE, new TableEntity("p", "a")),
        act(TableTransactionActionType.UPSERT_MERGE, new TableEntity("p", "b")),
        act(TableTransactionActionType.CREATE, new TableEntity("p", "exists")),
        act(TableTransactionActionType.DELETE, new TableEntity("p", "c")))));
    assertEquals(before, contents());

    // Index 1 updates an entity that does not exist: ResourceNotFound at index 1.
    assertTxFailed("ResourceNotFound", 1, () -> t.submitTransaction(List.of(
        act(TableTransactionActionType.UPSERT_REPLACE, new TableEntity("p", "c")),
        act(TableTransactionActionType.UPDATE_MERGE, new TableEntity("p", "missing")),
        act(TableTransactionActionType.DELETE, new TableEntity("p", "exists")))));
    assertEquals(before, contents());

    // Index 3 is conditional on a stale ETag: UpdateConditionNotSatisfied at index 3.
    TableEntity stale = t.getEntity("p", "exists");
    t.updateEntity(new TableEntity("p", "exists").addProperty("V", 2));
    Map<String, Map<String, Object>> now = contents();
    assertTxFailed("UpdateConditionNotSatisfied", 3, () -> t.submitTransaction(List.of(
        act(TableTransactionActionType.CREATE, new TableEntity("p", "d")),
        act(TableTransactionActionType.CREATE, new TableEntity("p", "e")),
        act(TableTransactionActionType.CREATE, new TableEntity("p", "f")),
        new TableTransactionAction(TableTransactionActionType.UPDATE_REPLACE,
            stale.addProperty("V", 3), true))));
    assertEquals(now, contents());

    // The same entity twice: InvalidDuplicateRow at the second one.
    assertTxFailed("InvalidDuplicateRow", 2, () -> t.submitTransaction(List.of(
        act(TableTransactionActionType.CREATE, new TableEntity("p", "g")),
        act(TableTransactionActionType.CREATE, new TableEntity("p", "h")),
        act(TableTransactionActionType.DELETE, new TableEntity("p", "g")))));
    assertEquals(now, contents());
  }

  @Test
  void transactionOnMissingTable() {
    TableClient gone = Partita.service().getTableClient(Partita.tableName("jnotable"));
    assertTxFailed("TableNotFound", 0, () -> gone.submitTransaction(
        List.of(act(TableTransactionActionType.CREATE, new TableEntity("p", "a")))));
  }

  @Test
  void oneHundredActionsAtMost() {
    List<TableTransactionAction> ok = new java.util.ArrayList<>();
    for (int i = 0; i < 100; i++) {
      ok.add(act(TableTransactionActionType.CREATE, new TableEntity("p", String.format("k%03d", i))));
    }
    assertEquals(100, t.submitTransaction(ok).getTransactionActionResponses().size());
    assertEquals(100, t.listEntities(new ListEntitiesOptions().setFilter("PartitionKey eq 'p'"), null, null)
        .stream().collect(Collectors.toList()).size());
    List<TableTransactionAction> tooMany = new java.util.ArrayList<>();
    for (int i = 0; i < 101; i++) {
      tooMany.add(act(TableTransactionActionType.CREATE, new TableEntity("q", String.format("k%03d", i))));
    }
    // The service reports this at index 0 or 99, so only the code is checked.
    TableTransactionFailedException e = assertThrows(TableTransactionFailedException.class,
        () -> t.submitTransaction(tooMany));
    assertEquals("InvalidInput", String.valueOf(e.getValue().getErrorCode()), e.getMessage());
    assertEquals(100, t.listEntities().stream().count());
  }
}
