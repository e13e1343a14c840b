package partita;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static partita.Partita.ACCOUNT;
import static partita.Partita.KEY;
import static partita.Partita.assertServiceError;

import com.azure.core.credential.AzureNamedKeyCredential;
import com.azure.core.http.HttpClient;
import com.azure.core.http.HttpRequest;
import com.azure.core.http.HttpResponse;
import com.azure.core.util.Context;
import com.azure.data.tables.TableClient;
import com.azure.data.tables.TableServiceClient;
import com.azure.data.tables.TableServiceClientBuilder;
import com.azure.data.tables.models.ListTablesOptions;
import com.azure.data.tables.models.TableEntity;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;

/** The ways an application points the SDK at partita. */
class ConnectionStringTest {

  /** Round trip through a service client: create a table, find it, write and read an entity. */
  private static void roundTrip(TableServiceClient svc, String prefix) {
    String name = Partita.tableName(prefix);
    TableClient t = svc.createTable(name);
    try {
      List<String> names = svc.listTables(new ListTablesOptions().setFilter("TableName eq '" + name + "'"), null, null)
          .stream().map(i -> i.getName()).collect(Collectors.toList());
      assertEquals(List.of(name), names);
      t.createEntity(new TableEntity("pk", "rk").addProperty("V", 7));
      assertEquals(7, t.getEntity("pk", "rk").getProperty("V"));
    } finally {
      svc.deleteTable(name);
    }
  }

  @Test
  void explicitConnectionString() {
    TableServiceClient svc = Partita.service();
    // (getAccountName() is no help here: for an IP address the SDK gives the first label, "127".)
    assertEquals(Partita.endpoint(), svc.getServiceEndpoint());
    roundTrip(svc, "jcs");
  }

  @Test
  void endpointAndNamedKeyCredential() {
    TableServiceClient svc = Partita.serviceWithKey();
    assertEquals(Partita.endpoint(), svc.getServiceEndpoint());
    roundTrip(svc, "jkey");
  }

  @Test
  void wrongKeyIsAuthenticationFailed() {
    // Same length, one character different: a well-formed key that is not the account's.
    String bad = (KEY.charAt(0) == 'A' ? "B" : "A") + KEY.substring(1);
    TableServiceClient svc = new TableServiceClientBuilder().endpoint(Partita.endpoint())
        .credential(new AzureNamedKeyCredential(ACCOUNT, bad)).retryOptions(Partita.retries())
        .buildClient();
    assertServiceError(403, "AuthenticationFailed", () -> svc.createTable(Partita.tableName("jbad")));
  }

  /**
   * UseDevelopmentStorage=true: the SDK turns it into http://127.0.0.1:10002/devstoreaccount1 with
   * the well-known key, the address and account partita serves by default. In CI, TestJavaSDK also
   * runs a partita on 127.0.0.1:10002 and sets PARTITA_DEVSTORE_DIRECT=1, and the client talks to
   * it as it is. Elsewhere (development machines are shared, the port may be someone else's) every
   * request the SDK makes for 127.0.0.1:10002 is sent to the test server's port instead, unchanged
   * otherwise: the SharedKeyLite signature covers the account and path, not the port, so the
   * server still checks the key the SDK derived from the connection string.
   */
  @Test
  void useDevelopmentStorage() {
    String devstore = "http://127.0.0.1:10002/" + ACCOUNT;
    boolean direct = "1".equals(System.getenv("PARTITA_DEVSTORE_DIRECT"));
    TableServiceClientBuilder b = new TableServiceClientBuilder()
        .connectionString("UseDevelopmentStorage=true").retryOptions(Partita.retries());
    Redirect redirect = null;
    if (!direct) {
      redirect = new Redirect("http://127.0.0.1:10002/", Partita.url() + "/");
      b.httpClient(redirect);
    }
    TableServiceClient svc = b.buildClient();
    assertEquals(devstore, svc.getServiceEndpoint());
    roundTrip(svc, "jdev");
    if (direct) {
      // The 127.0.0.1:10002 server is not the random-port one: a table made through
      // UseDevelopmentStorage=true is not in the other's list.
      String name = Partita.tableName("jdevonly");
      svc.createTable(name);
      try {
        assertEquals(List.of(), Partita.service()
            .listTables(new ListTablesOptions().setFilter("TableName eq '" + name + "'"), null, null)
            .stream().map(i -> i.getName()).collect(Collectors.toList()));
      } finally {
        svc.deleteTable(name);
      }
    }
    if (redirect != null) {
      assertTrue(redirect.seen.size() >= 5, "requests sent: " + redirect.seen);
      for (String u : redirect.seen) {
        assertTrue(u.startsWith(devstore + "/") || u.startsWith(devstore + "?")
            || u.startsWith(devstore + "("), "the SDK addressed " + u);
      }
    }
  }

  /** An HttpClient that sends requests for one base URL to another and records what it saw. */
  static final class Redirect implements HttpClient {
    final HttpClient inner = HttpClient.createDefault();
    final String from;
    final String to;
    final List<String> seen = new CopyOnWriteArrayList<>();

    Redirect(String from, String to) {
      this.from = from;
      this.to = to;
    }

    private HttpRequest rewrite(HttpRequest r) {
      String u = r.getUrl().toString();
      seen.add(u);
      if (u.startsWith(from)) {
        r.setUrl(to + u.substring(from.length()));
      }
      return r;
    }

    @Override
    public Mono<HttpResponse> send(HttpRequest request) {
      return inner.send(rewrite(request));
    }

    @Override
    public Mono<HttpResponse> send(HttpRequest request, Context context) {
      return inner.send(rewrite(request), context);
    }

    @Override
    public HttpResponse sendSync(HttpRequest request, Context context) {
      return inner.sendSync(rewrite(request), context);
    }
  }
}
