package partita;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static partita.Partita.assertServiceError;

import com.azure.core.http.rest.PagedResponse;
import com.azure.core.http.rest.Response;
import com.azure.data.tables.TableClient;
import com.azure.data.tables.TableServiceClient;
import com.azure.data.tables.models.ListTablesOptions;
import com.azure.data.tables.models.TableEntity;
import com.azure.data.tables.models.TableItem;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** Create, list, query and delete tables through TableServiceClient and TableClient. */
class TablesTest {
  private final TableServiceClient svc = Partita.service();

  private List<String> namesWithPrefix(String prefix) {
    // Every name with the prefix: prefix <= name < prefix + '{' ('{' follows the letters and digits).
    String filter = "TableName ge '" + prefix + "' and TableName lt '" + prefix + "{'";
    return svc.listTables(new ListTablesOptions().setFilter(filter), null, null).stream()
        .map(TableItem::getName).collect(Collectors.toList());
  }

  @Test
  void createListDelete() {
    String name = Partita.tableName("jtab");
    TableClient t = svc.createTable(name);
    assertEquals(name, t.getTableName());
    assertEquals(List.of(name), namesWithPrefix(name));

    // The name is case-insensitively unique.
    assertServiceError(409, "TableAlreadyExists", () -> svc.createTable(name));
    assertServiceError(409, "TableAlreadyExists", () -> svc.createTable(name.toUpperCase()));
    // createTableIfNotExists does not fail on an existing table.
    Response<TableClient> again = svc.createTableIfNotExistsWithResponse(name, null, null);
    assertEquals(409, again.getStatusCode());

    svc.deleteTable(name);
    assertEquals(List.of(), namesWithPrefix(name));
    // Deleting through the SDK is idempotent (it swallows the 404), but the raw status shows it.
    assertEquals(404, svc.deleteTableWithResponse(name, null, null).getStatusCode());
    // Entity operations on a table that does not exist.
    assertServiceError(404, "TableNotFound",
        () -> t.createEntity(new TableEntity("p", "r")));
  }

  @Test
  void tableClientCreateAndDelete() {
    String name = Partita.tableName("jtc");
    TableClient t = svc.getTableClient(name);
    TableItem item = t.createTable();
    assertEquals(name, item.getName());
    assertServiceError(409, "TableAlreadyExists", t::createTable);
    t.deleteTable();
    assertEquals(List.of(), namesWithPrefix(name));
  }

  @Test
  void invalidNameIsRejected() {
    assertServiceError(400, "InvalidResourceName", () -> svc.createTable("1startswithadigit"));
    assertServiceError(400, "InvalidResourceName", () -> svc.createTable("has_underscore"));
    assertServiceError(400, "OutOfRangeInput", () -> svc.createTable("ab"));
    assertServiceError(400, "OutOfRangeInput", () -> svc.createTable("a".repeat(64)));
  }

  @Test
  void listByPageWithContinuation() {
    String prefix = Partita.tableName("jpg");
    List<String> want = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      String n = prefix + "x" + i;
      svc.createTable(n);
      want.add(n);
    }
    try {
      String filter = "TableName ge '" + prefix + "' and TableName lt '" + prefix + "{'";
      List<Integer> sizes = new ArrayList<>();
      List<String> got = new ArrayList<>();
      List<String> tokens = new ArrayList<>();
      for (PagedResponse<TableItem> page :
          svc.listTables(new ListTablesOptions().setFilter(filter).setTop(2), null, null).iterableByPage()) {
        sizes.add(page.getValue().size());
        page.getValue().forEach(i -> got.add(i.getName()));
        tokens.add(page.getContinuationToken());
      }
      assertEquals(List.of(2, 2, 1), sizes);
      assertEquals(want, got);
      assertNotNull(tokens.get(0));
      assertNotNull(tokens.get(1));
      assertNull(tokens.get(2));

      // Resuming from the first page's token gives the rest.
      List<String> rest = new ArrayList<>();
      for (PagedResponse<TableItem> page :
          svc.listTables(new ListTablesOptions().setFilter(filter).setTop(2), null, null)
              .iterableByPage(tokens.get(0))) {
        page.getValue().forEach(i -> rest.add(i.getName()));
      }
      assertEquals(want.subList(2, 5), rest);
    } finally {
      want.forEach(svc::deleteTable);
    }
    assertFalse(namesWithPrefix(prefix).iterator().hasNext());
  }
}
