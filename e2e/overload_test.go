package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// rssKB reads a process's resident set size from /proc.
func rssKB(pid int) int {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return n
		}
	}
	return 0
}

// TestOverload_ThousandClients: 1,000 concurrent clients, each on its own
// connection, insert and read for a few seconds against a server limited
// to 32 requests at once. Every answer is a success or 503 ServerBusy
// (never a timeout or a dropped connection), and resident memory stays
// bounded.
func TestOverload_ThousandClients(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode")
	}
	s := StartServer(t, "", "--max-inflight", "32", "--queue-wait", "200ms")
	c := newTable(t, serviceClient(t, s))
	table := tableNames[c]
	tr := &http.Transport{MaxConnsPerHost: 1000, MaxIdleConnsPerHost: 1000}
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	defer tr.CloseIdleConnections()
	var ok, busy, other atomic.Int64
	var firstOther atomic.Value
	stop := make(chan struct{})
	var peak atomic.Int64
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
				if r := int64(rssKB(s.cmd.Process.Pid)); r > peak.Load() {
					peak.Store(r)
				}
			}
		}
	}()
	payload := strings.Repeat("x", 1000)
	var wg sync.WaitGroup
	deadline := time.Now().Add(4 * time.Second)
	for w := 0; w < 1000; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; time.Now().Before(deadline); i++ {
				var req *http.Request
				path := "/" + devAccount + "/" + table
				if i%2 == 0 {
					body := fmt.Sprintf(`{"PartitionKey":"p%d","RowKey":"%d","D":"%s"}`, w%50, w*1000+i, payload)
					req, _ = http.NewRequest("POST", s.URL+path, strings.NewReader(body))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Prefer", "return-no-content")
				} else {
					path += fmt.Sprintf("(PartitionKey='p%d',RowKey='%d')", w%50, w*1000+i-1)
					req, _ = http.NewRequest("GET", s.URL+path, nil)
				}
				signLite(req, strings.SplitN(path, "?", 2)[0])
				resp, err := client.Do(req)
				if err != nil {
					other.Add(1)
					firstOther.CompareAndSwap(nil, err.Error())
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				switch {
				case resp.StatusCode < 300, resp.StatusCode == 404: // 404: the read raced a refused insert
					ok.Add(1)
				case resp.StatusCode == 503 && resp.Header.Get("x-ms-error-code") == "ServerBusy" && resp.Header.Get("Retry-After") != "":
					busy.Add(1)
				default:
					other.Add(1)
					firstOther.CompareAndSwap(nil, resp.Status)
				}
			}
		}(w)
	}
	wg.Wait()
	close(stop)
	t.Logf("1000 clients: %d served, %d ServerBusy, %d other; peak RSS %d MB", ok.Load(), busy.Load(), other.Load(), peak.Load()/1024)
	if other.Load() != 0 {
		t.Errorf("%d answers were neither success nor 503 ServerBusy (first: %v)", other.Load(), firstOther.Load())
	}
	if ok.Load() == 0 {
		t.Error("nothing was served")
	}
	if peak.Load() > 400*1024 {
		t.Errorf("peak RSS %d MB under 1000 clients, want bounded (< 400 MB)", peak.Load()/1024)
	}
}
