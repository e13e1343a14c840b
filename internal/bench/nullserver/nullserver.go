// Package nullserver is the do-nothing Table server that
// internal/cmd/benchcompare measures the bench client and the HTTP stack
// against.
package nullserver

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The do-nothing server answers every request with a canned response of the
// right shape, routing by method only (plus one suffix test that tells a
// point GET from a query and a $batch from an insert). It authenticates,
// parses and stores nothing: what `partita bench` measures against it is
// the ceiling of the client and the HTTP stack on this machine. Its canned
// entity carries a Payload of the bench's entity size, so that a point GET
// costs the client what reading a real entity of that size costs.

const nullETag = `W/"datetime'2024-01-02T03%3A04%3A05.1234567Z'"`

var (
	nullBatchBoundary = "batchresponse_00000000-0000-4000-8000-000000000000"
	nullCSBoundary    = "changesetresponse_00000000-0000-4000-8000-000000000001"
	nullBatchBody     = []byte("--" + nullBatchBoundary + "\r\nContent-Type: multipart/mixed; boundary=" + nullCSBoundary + "\r\n\r\n" +
		"--" + nullCSBoundary + "\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n" +
		"HTTP/1.1 204 No Content\r\nX-Content-Type-Options: nosniff\r\nCache-Control: no-cache\r\nPreference-Applied: return-no-content\r\nDataServiceVersion: 3.0;\r\n" +
		"ETag: " + nullETag + "\r\n\r\n\r\n" +
		"--" + nullCSBoundary + "--\r\n--" + nullBatchBoundary + "--\r\n")

	hJSON        = []string{"application/json;odata=minimalmetadata;streaming=true;charset=utf-8"}
	hBatch       = []string{"multipart/mixed; boundary=" + nullBatchBoundary}
	hNoCache     = []string{"no-cache"}
	hNosniff     = []string{"nosniff"}
	hVersion     = []string{apiVersion}
	hRequestID   = []string{"00000000-0000-4000-8000-000000000000"}
	hETag        = []string{nullETag}
	hZero        = []string{"0"}
	hBatchLen    = []string{strconv.Itoa(len(nullBatchBody))}
	hNoContentPA = []string{"return-no-content"}
)

// apiVersion is the x-ms-version the canned responses carry.
const apiVersion = "2019-02-02"

// payload is n characters that need no JSON escaping, like the bench's
// payloads (their values do not matter here, only their length).
func payload(n int) []byte {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	rng := rand.New(rand.NewPCG(1, 2))
	p := make([]byte, max(n, 0))
	for i := range p {
		p[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return p
}

// nullEntity is the canned entity: the bench's properties, with a Payload
// of payload characters.
func nullEntity(size int) string {
	p := payload(size)
	return `{"odata.etag":"` + strings.ReplaceAll(nullETag, `"`, `\"`) + `","PartitionKey":"p0000","RowKey":"r000000000000",` +
		`"Timestamp":"2024-01-02T03:04:05.1234567Z","Seq@odata.type":"Edm.Int64","Seq":"0","Bucket":0,"Payload":"` + string(p) + `"}`
}

// Handler is the do-nothing server's handler; its canned entity has a
// Payload of payload characters.
func Handler(payload int) http.Handler {
	e := nullEntity(payload)
	n := &nullServer{
		entity: []byte(`{"odata.metadata":"http://127.0.0.1/devstoreaccount1/$metadata#bench/@Element",` + e[1:]),
		query:  []byte(`{"odata.metadata":"http://127.0.0.1/devstoreaccount1/$metadata#bench","value":[` + e + `]}`),
	}
	n.entityLen = []string{strconv.Itoa(len(n.entity))}
	n.queryLen = []string{strconv.Itoa(len(n.query))}
	return n
}

type nullServer struct {
	entity, query       []byte
	entityLen, queryLen []string
}

func (n *nullServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Drain the body so the connection stays reusable; nothing is parsed.
	io.Copy(io.Discard, r.Body)
	h := w.Header()
	h["X-Ms-Request-Id"] = hRequestID
	h["X-Ms-Version"] = hVersion
	h["X-Content-Type-Options"] = hNosniff
	h["Cache-Control"] = hNoCache
	path := r.URL.Path
	switch r.Method {
	case http.MethodGet:
		h["Content-Type"] = hJSON
		if strings.HasSuffix(path, "')") {
			h["Content-Length"] = n.entityLen
			h["Etag"] = hETag
			w.WriteHeader(http.StatusOK)
			w.Write(n.entity)
			return
		}
		h["Content-Length"] = n.queryLen
		w.WriteHeader(http.StatusOK)
		w.Write(n.query)
	case http.MethodPost:
		if strings.HasSuffix(path, "$batch") {
			h["Content-Type"] = hBatch
			h["Content-Length"] = hBatchLen
			w.WriteHeader(http.StatusAccepted)
			w.Write(nullBatchBody)
			return
		}
		h["Content-Length"] = hZero
		h["Etag"] = hETag
		h["Preference-Applied"] = hNoContentPA
		w.WriteHeader(http.StatusNoContent)
	case http.MethodDelete:
		h["Content-Length"] = hZero
		w.WriteHeader(http.StatusNoContent)
	default: // PUT, PATCH, MERGE, OPTIONS, …
		h["Content-Length"] = hZero
		h["Etag"] = hETag
		w.WriteHeader(http.StatusNoContent)
	}
}

// Serve runs the do-nothing server on addr until ctx ends; its canned
// entity has a Payload of payload characters. ready, when not nil, receives
// the listening address.
func Serve(ctx context.Context, addr string, payload int, out io.Writer, ready func(net.Addr)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           Handler(payload),
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	fmt.Fprintf(out, "do-nothing server on http://%s (every request answered with a canned response; entity payload %d B)\n", ln.Addr(), payload)
	if ready != nil {
		ready(ln.Addr())
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(sctx)
	return nil
}
