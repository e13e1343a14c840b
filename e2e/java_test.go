package e2e

// TestJavaSDK runs the com.azure:azure-data-tables JUnit suite in test/java
// (Maven, offline) against a partita started on a random port.
//
// Setup, once (scripts/test does it): fetch the Maven dependencies into the
// local repository (~/.m2) by running the suite's server-free class:
//
//	mvn -B -q -f test/java/pom.xml test -Dtest=ClientSideTest
//
// Missing java or mvn, or dependencies that were not fetched, fail the test:
// it is never skipped.
//
// UseDevelopmentStorage=true names http://127.0.0.1:10002, a fixed port. In CI
// (the CI environment variable is set; the machine is CI's alone) a second
// partita listens there and the suite talks to it directly. On a development
// machine the port may belong to someone else, so the suite sends the SDK's
// requests for 127.0.0.1:10002 to the random-port server instead (see
// ConnectionStringTest.useDevelopmentStorage).

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

const devstoreAddr = "127.0.0.1:10002"

func TestJavaSDK(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("..", "test", "java"))
	if err != nil {
		t.Fatal(err)
	}
	java, err := exec.LookPath("java")
	if err != nil {
		t.Fatal("java is not on PATH: install a JDK (17 or later) and Maven, then run `mvn -B -q -f test/java/pom.xml test -Dtest=ClientSideTest` once to fetch the dependencies")
	}
	mvn, err := exec.LookPath("mvn")
	if err != nil {
		t.Fatal("mvn is not on PATH: install Maven, then run `mvn -B -q -f test/java/pom.xml test -Dtest=ClientSideTest` once to fetch the dependencies")
	}
	if out, err := exec.Command(java, "-version").CombinedOutput(); err != nil {
		t.Fatalf("java -version: %v\n%s", err, out)
	} else {
		t.Logf("%s", strings.SplitN(string(out), "\n", 2)[0])
	}

	s := StartServer(t, "")
	env := javaEnv(s.URL)
	if os.Getenv("CI") != "" {
		ln, err := net.Listen("tcp", devstoreAddr)
		if err != nil {
			t.Fatalf("CI: %s must be free for the UseDevelopmentStorage=true test: %v", devstoreAddr, err)
		}
		ln.Close()
		dev := StartServer(t, "", "--addr", devstoreAddr)
		if dev.URL != "http://"+devstoreAddr {
			t.Fatalf("the development-storage server serves %s, want http://%s", dev.URL, devstoreAddr)
		}
		env = append(env, "PARTITA_DEVSTORE_DIRECT=1")
	}

	t.Logf("PARTITA_URL=%s", s.URL)
	var offlineMiss sync.Once
	// Offline: the dependencies were fetched beforehand, so this measures the
	// tests, not the downloads, and a missing one is reported at once.
	runSuite(t, suiteRun{name: "mvn test", max: 5 * time.Minute, dir: dir, env: env,
		argv: []string{mvn, "-B", "-o", "test"},
		keep: func(line string) bool {
			if strings.Contains(line, "in offline mode") {
				offlineMiss.Do(func() {
					t.Errorf("Maven is missing dependencies: run `mvn -B -q -f test/java/pom.xml test -Dtest=ClientSideTest` (scripts/test does) to fetch them")
				})
			}
			// Maven's download and plugin banners say nothing about the tests.
			return !strings.HasPrefix(line, "[INFO] --- ") && !strings.HasPrefix(line, "[INFO] Download")
		},
		hint: " and test/java/target/surefire-reports"})
}

// javaEnv is the environment for Maven and the JVM: the parent's without
// proxy settings (azure-core honours HTTP(S)_PROXY; everything here is
// loopback) and without a PARTITA_* variable of the suite's, plus the server URL.
func javaEnv(partitaURL string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch strings.ToUpper(k) {
		case "HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "NO_PROXY", "PARTITA_URL", "PARTITA_DEVSTORE_DIRECT":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "PARTITA_URL="+partitaURL)
}
